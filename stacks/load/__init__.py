"""From a stack file to a validated config: reading the file, validation, derived checks, component arguments."""
