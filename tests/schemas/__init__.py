"""Tests of the vendored schemas in schemas/: CRDs and the vLLM argument tables."""
