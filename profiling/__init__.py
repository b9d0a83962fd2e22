"""Benchmarks, floors, static reports and Nsight Compute sweeps for the NVFP4 grouped GEMM."""
