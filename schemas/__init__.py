"""Vendored upstream facts: the CRD schemas the tests check renders against, the `vllm serve` argument
tables, and the pinned vLLM releases' facts (schemas/vllm_releases.py) the config checks the engine with."""
