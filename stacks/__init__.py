"""The stack: configuration, loading, composition of the components, capacity planning and offline runs."""
