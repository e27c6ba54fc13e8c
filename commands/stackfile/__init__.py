"""Stack files as the Pulumi CLI reads them: YAML 1.2 scalars, ESC environments, the settings a program sees."""
