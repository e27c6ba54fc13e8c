"""Facts of the A4 machine the serving layer runs on (GKE docs "About GPUs in Autopilot"; the benchmark write-up)."""

A4_MACHINE_TYPE = "a4-highgpu-8g"
B200_ACCELERATOR = "nvidia-b200"
# Autopilot accepts exactly 8 B200 per pod and puts one GPU pod on each A4 node.
B200_GPUS_PER_NODE = 8
