"""Scripts for the GPU machine: the compute-sanitizer matrix (ci.sanitize)."""
