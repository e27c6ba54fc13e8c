"""The stack's typed configuration: one pydantic model per config group, presets and value grammars."""
