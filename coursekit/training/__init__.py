"""Training: FLOPs, memory, roofline, input pipeline."""
