"""The CrossGuard policy pack gke-b200-serving alone (check-policies runs it offline); imports only policies/."""
