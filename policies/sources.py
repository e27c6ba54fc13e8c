"""The public sources the policy pack cites by title and link. The pack runs from its own folder
(`pulumi preview --policy-pack policies`), without the project's `common/`: a test holds these to
`common/sources.py`, the product's one list."""

WRITEUP = (
    '"1 Million Tokens per Second: Qwen 3.5 27B on GKE with B200 GPUs" (Medium, Google Cloud - Community, March '
    "2026, https://medium.com/google-cloud/1-million-tokens-per-second-qwen-3-5-27b-on-gke-with-b200-gpus-161da5c1b592)"
)
