"""Below both wings: the bounded reader of every input file (regular files only, size and depth limits)."""
