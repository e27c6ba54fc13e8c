"""`preview`: the update the engine would make from one render to another (changes.md, changes.json)."""
