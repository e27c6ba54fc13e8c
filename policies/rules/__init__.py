"""The pack's rules, one module per concern, each rule with a stable id, a level and its reason."""
