"""One Pulumi component per thing the stack declares, each with the typed Args it owns; imports only components/."""
