"""The production kernels and the host-side machinery they share.

* ``kernel.plan``, ``kernel.validation``, ``kernel.tables``, ``kernel.compile_cache``: host-side
  planning, input checks, device tables and the compile cache, shared by every kernel;
* ``kernel.model``: the CPU model of the kernels' arithmetic, run on the shared plan;
* ``kernel.blackwell``: the sm_100a tcgen05 kernel (compiled and SASS-checked in CI; written for
  a B200, where no run of it is recorded);
* ``kernel.hopper``: the sm_90a wgmma port (runs on the H200).

Importing this package does not import CuTe DSL; the kernel subpackages do, lazily.
"""
