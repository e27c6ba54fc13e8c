"""`check-policies`: the policy pack over a render's resources, its config validated as the engine does."""
