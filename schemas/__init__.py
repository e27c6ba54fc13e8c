"""Vendored upstream schemas the tests check renders against: CRDs and the `vllm serve` argument tables."""
