"""The CrossGuard policy pack gke-b200-serving and its offline runner; imports only policies/."""
