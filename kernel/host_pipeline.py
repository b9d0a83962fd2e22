"""The one host pipeline every kernel family runs through: validate -> plan -> tables -> compile -> launch.

A family supplies only :class:`FamilyHooks` (its config rules, its constraints, how many CTAs it
may launch, the fourth table its kernel reads, and how to compile). Everything else is shared:

* :meth:`HostPipeline.prepare` validates the problem (one typed error, before any launch),
  plans the launch (``kernel.plan``), builds or reuses the immutable device tables
  (``kernel.tables``) and fetches the compiled kernel from the compile cache (one compile per
  ``(config, group count)``); ``dry_run=True`` does all of that on CPU tensors, without a GPU.
  A production preparation learns the problem's shape template (:mod:`kernel.seen_shapes`) and
  builds its pointer table and fourth table through it (one host block, one copy), exactly as
  every later problem of those shapes gets them (in one C++ pass, address checks included, where
  the native module of :mod:`kernel.native_probe` is loaded; ``native_seen=False`` or
  ``NVFP4_NATIVE_PROBE=0``: the Python code, same decisions and bytes); harness builds and dry
  runs use the table cache;
* :meth:`HostPipeline.launch` launches a prepared problem on a stream and returns the caller's
  ``c`` tensors in the caller's order (every family, same contract);
* :meth:`HostPipeline.run` is ``custom_kernel``: prepare + launch behind the fast path of
  :mod:`kernel.fast_path`, so a repeated call with the same tensors costs an identity check
  and the launch; a first call on new tensors of seen shapes, on torch's current stream, takes
  one lane where the native pass is loaded (:meth:`HostPipeline._run_seen`: the native pass,
  the arguments rebased from the stream's prototype, the launch and the fast-path store, with
  the decisions, tables and launch that prepare + launch would make, and no ``Prepared``).

Harness-only builds never change a production launch: a ``perturbation``
(:mod:`kernel.perturbation`: seeded delays and poison at the synchronization sites) and an
``ablation`` (:mod:`kernel.hopper.ablation`: one part of the kernel left out, profiling only)
are build options next to the config, part of the compile key (production keeps
``(config, num_groups)``), and ``strict`` prepares guarded device tables (:mod:`kernel.tables`);
none goes through the fast path (``run`` takes no ablation: ablated builds are prepared and
launched by :mod:`profiling.ablation`).

Every compiled kernel of the harness has one signature: ``(sizes, tile_prefix, pointers, aux,
num_ctas, stream)``, where ``aux`` is the family's fourth table (the Hopper TMA loader's tensor
maps, the Blackwell kernel's per-CTA descriptor workspace) or, when a family needs none, the
pointer table again (never read). The launch arguments are marshalled once per prepared problem
(:class:`LaunchArgs`) and replayed through CuTe DSL's ``run_compiled_program``, which skips the
per-call Python argument conversion of ``compiled(...)``.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, Hashable, Protocol

import numpy as np
import torch

from kernel import native_probe
from kernel.compile_cache import CompileCache
from kernel.errors import DeviceUnavailableError, ProtocolViolation
from kernel.fast_path import FastPath
from kernel.fast_path import flatten
from kernel.plan import LaunchPlan, make_plan
from kernel.seen_shapes import ShapeTemplate, ShapeTemplates
from kernel.tables import DeviceTables, TableCache
from kernel.validation import GroupTensors, KernelConstraints, validate_problem

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


class FamilyHooks(Protocol):
    """What a kernel family plugs into :class:`HostPipeline`."""

    name: str  # "hopper", "blackwell"
    arch: str  # "sm_90a", "sm_100a"

    def resolve(self, config: Any) -> Any:
        """The config with defaults filled in; raises UnsupportedConfigError when invalid."""

    def constraints(self, config: Any) -> KernelConstraints:
        """What the (resolved) config accepts, for tensors on CUDA."""

    def unavailable_reason(self) -> str | None:
        """None when this machine can run the family's kernels, else why not."""

    def max_ctas(self, config: Any, *, dry_run: bool) -> int | None:
        """The persistent grid's cap (None: one CTA per tile)."""

    def aux_table(self, config: Any, plan: LaunchPlan, groups: list[GroupTensors],
                  device: torch.device, strict: bool = False) -> "AuxTable | None":
        """The kernel's fourth argument, built once per prepared problem (None: not needed);
        ``strict``: with guard rows around it, where it is a per-slot table (kernel.tables)."""

    def build(self, config: Any, num_groups: int, dump_dir: str | os.PathLike | None = None,
              perturbation: Any = None, ablation: Any = None) -> Any:
        """Compile ``config`` for ``num_groups`` groups (uncached); ``dump_dir`` keeps the cubin;
        ``perturbation`` (kernel.perturbation) and ``ablation`` (profiling only), harness builds
        only, where the family supports them (UnsupportedConfigError where it does not)."""

    # optional: ``workspace(config, plan, stream, device) -> torch.Tensor | None``, a device
    # workspace the kernel takes as one more argument (after the delay table of a harness build),
    # chosen when the arguments are marshalled for a stream, so that launches on different
    # streams never share one (kernel.hopper.workspace); a family without it takes none.
    # optional: ``aux_template(config, plan, groups) -> kernel.seen_shapes.AuxTemplate | None``,
    # the fourth table as bytes fixed per shape signature plus the addresses patched in per
    # problem (kernel.tensor_maps.MapTemplate); a family without it gets ``aux_table`` per problem


@dataclass(frozen=True)
class AuxTable:
    """The fourth kernel argument: a device tensor, the element type the kernel sees and its alignment."""

    tensor: torch.Tensor
    element: str  # "uint8" or "int64"
    align: int


@dataclass(frozen=True)
class Prepared:
    """Everything a launch needs. ``groups`` are in caller order, ``plan`` slots in launch order."""

    config: Any  # resolved
    groups: list[GroupTensors]
    plan: LaunchPlan
    tables: DeviceTables | None  # None when nothing is launched (no tile) or for a dry run without tables
    aux: AuxTable | None
    compiled: Any  # None for a dry run that did not compile
    outputs: list[torch.Tensor]  # the callers' c tensors, caller order
    dry_run: bool = False
    launch_args: "LaunchArgs | None" = field(default=None, compare=False)
    perturbation: Any = None  # a harness build (kernel.perturbation); None in production
    # a run-time perturbation's delay table on the device (Perturbation.device_words): the
    # extra argument of that build; None otherwise
    delay_table: Any = field(default=None, compare=False, repr=False)
    ablation: Any = None  # a profiling build (kernel.hopper.ablation); None in production
    strict: bool = False  # guarded device tables
    # the raw stream the tables were copied on without waiting (kernel.seen_shapes path); a
    # launch on another stream first waits for that copy. None: the copy was synchronous
    upload_stream: int | None = None
    # the shape template (kernel.seen_shapes) of a production preparation: its launch arguments
    # are marshalled once per stream and rebased to each problem's tables
    template: Any = field(default=None, compare=False, repr=False)


# the seen-shape path's Prepared without the frozen dataclass __init__ (one object.__setattr__
# per field, a third of that path's Python time on the CPU model): every field with a default
# gets it, the others are those _prepared takes (checked here, so a new field cannot be missed)
_PREPARED_DEFAULTS = {f.name: f.default for f in fields(Prepared) if f.default is not MISSING}
assert [f.name for f in fields(Prepared) if f.default is MISSING] == [
    "config", "groups", "plan", "tables", "aux", "compiled", "outputs"]


def _frozen(cls, values: dict):
    """An instance of the frozen dataclass ``cls`` with the field values ``values`` (every
    field), without its ``__init__`` (one ``object.__setattr__`` per field): equal to
    ``cls(**values)`` field for field (properties/test_native_seen_properties.py)."""
    obj = object.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    return obj


# the fields _frozen is given on the seen-shape path (checked here, so a new field cannot be missed)
assert [f.name for f in fields(DeviceTables)] == ["sizes", "tile_prefix", "pointers", "guard_rows"]
assert [f.name for f in fields(AuxTable)] == ["tensor", "element", "align"]


def _prepared(config, groups, plan, tables, aux, compiled, outputs, upload_stream, template) -> Prepared:
    """``Prepared(config, groups, plan, tables, aux, compiled, outputs, upload_stream=...,
    template=...)``, equal to it field for field (properties/test_native_seen_properties.py)."""
    obj = object.__new__(Prepared)
    object.__setattr__(obj, "__dict__", {
        **_PREPARED_DEFAULTS, "config": config, "groups": groups, "plan": plan, "tables": tables, "aux": aux,
        "compiled": compiled, "outputs": outputs, "upload_stream": upload_stream, "template": template})
    return obj


class LaunchArgs:
    """The compiled kernel's arguments, marshalled once; :meth:`launch` replays them on ``stream``."""

    def __init__(self, compiled: Any, tables: DeviceTables, aux: AuxTable | None, num_ctas: int, stream: int,
                 delay_table: torch.Tensor | None = None, workspace: torch.Tensor | None = None):
        import cuda.bindings.driver as cuda
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import make_ptr

        def ptr(t: torch.Tensor, dtype, align: int):
            return make_ptr(dtype, t.data_ptr(), cute.AddressSpace.gmem, assumed_align=align)

        aux_arg = (
            # a variant with no fourth table never reads it: any 64-byte aligned address will do
            # (the pointer table's own address need not be aligned: strict tables are views
            # behind guard rows)
            make_ptr(cutlass.Uint8, tables.pointers.data_ptr() // 64 * 64, cute.AddressSpace.gmem, assumed_align=64)
            if aux is None
            else ptr(aux.tensor, cutlass.Uint8 if aux.element == "uint8" else cutlass.Int64, aux.align)
        )
        self.stream = stream
        self.workspace = workspace  # kept alive as long as these arguments (and their rebased copies)
        self.args = (
            ptr(tables.sizes, cutlass.Int32, 16),
            ptr(tables.tile_prefix, cutlass.Int32, 16),
            ptr(tables.pointers, cutlass.Int64, 16),
            aux_arg,
            # a run-time perturbed build only (kernel.perturbation): its delay table
            *(() if delay_table is None else (ptr(delay_table, cutlass.Int32, 16),)),
            # a family's per-stream workspace (FamilyHooks.workspace), held with the arguments
            *(() if workspace is None else (ptr(workspace, cutlass.Uint8, 256),)),
            cutlass.Int32(num_ctas),
            cuda.CUstream(stream),
        )
        # the marshalled C arguments own their storage; ``args`` and ``adapted`` stay referenced
        self.exe_args, self.adapted = compiled.generate_execution_args(*self.args)
        self._run = compiled.run_compiled_program
        self._packed, self._capi, self._result = _prepacked(compiled, self.exe_args)
        self._keep = self._image = None
        # whether each table argument is a 64-bit cell holding the table's address (checked, not
        # assumed: then :meth:`rebased` may point two of them at other cells)
        self.rebasable = self._packed is not None and _cells_hold(self._packed, [
            tables.sizes.data_ptr(), tables.tile_prefix.data_ptr(), tables.pointers.data_ptr(),
            tables.pointers.data_ptr() // 64 * 64 if aux is None else aux.tensor.data_ptr()])

    def rebased(self, pointers: int, aux: int) -> "LaunchArgs":
        """These arguments with the pointer table at ``pointers`` and the fourth table at ``aux``
        (same kernel, sizes and tile-prefix tables, CTA count and stream): a copy of the packed
        argument array whose two table entries point at two new 64-bit cells. Only on a
        :attr:`rebasable` instance."""
        if not self.rebasable:
            raise ValueError("these launch arguments cannot be rebased")
        image = self._image
        if image is None:  # made once per prototype
            import ctypes

            n = len(self._packed)
            # the packed array and two cells, as bytes; every attribute of a copy but its array
            image = self._image = (ctypes.c_void_p * (n + 2), bytes(self._packed) + bytes(16), n, ctypes.addressof, {
                "stream": self.stream, "args": None, "exe_args": None, "adapted": None, "_run": None,
                "workspace": self.workspace,  # the prototype's: same stream, same shape template
                "_capi": self._capi, "_result": self._result,
                "_keep": self,  # the other cells live in the prototype
                "rebasable": False, "_image": None})
        array, raw, n, addressof, attributes = image
        # one ctypes array: the prototype's argument addresses, then the two new 64-bit cells,
        # which entries 2 and 3 (the pointer table and the fourth table) point at
        packed = array.from_buffer_copy(raw)
        cells = addressof(packed) + 8 * n
        packed[2], packed[3], packed[n], packed[n + 1] = cells, cells + 8, pointers, aux
        new = object.__new__(LaunchArgs)
        new.__dict__ = {**attributes, "_packed": packed}
        return new

    def launch(self) -> None:
        if self._packed is None:
            self._run(self.exe_args)
            return
        self._capi(self._packed)
        if self._result is not None and self._result.value:
            _raise_launch_error(self._result.value)


def _cells_hold(packed: Any, addresses: list[int]) -> bool:
    """Whether the first entries of ``packed`` point at 64-bit cells holding ``addresses``."""
    import ctypes

    try:
        return all(packed[i] and ctypes.c_uint64.from_address(packed[i]).value == a
                   for i, a in enumerate(addresses))
    except (TypeError, ValueError):
        return False


def _prepacked(compiled: Any, exe_args: list) -> tuple:
    """``(packed, capi, result)``: the C argument array of ``exe_args`` built once, the compiled
    program's C entry point and its status cell, so a replay is one C call; ``(None, None, None)``
    where this CuTe DSL does not expose them (``run_compiled_program`` is then used every time).

    ``compiled.run_compiled_program`` takes a lock, finds its executor (``JitExecutor``, created
    once per compiled function: it loads the CUDA library) and rebuilds the same argument array
    on every call (CuTe DSL 4.x, ``_get_invoke_packed_args``: the argument addresses, then the
    status cell and the kernel handles). Here the array is built by that very function once
    and copied (it returns a per-thread buffer it reuses)."""
    import ctypes

    try:
        with compiled._executor_lock:
            if compiled._default_executor is None:
                compiled._default_executor = compiled.to(None)
        executor = compiled._default_executor
        shared = executor._get_invoke_packed_args(exe_args)
        n = executor._num_extra_args + len(exe_args)
        capi = executor.capi_func
        result = executor.cuda_result if executor._has_cuda_result else None
    except AttributeError:
        return None, None, None
    packed = (ctypes.c_void_p * n)()
    ctypes.memmove(packed, shared, n * ctypes.sizeof(ctypes.c_void_p))
    return packed, capi, result


def _raise_launch_error(code: int) -> None:
    from cutlass.base_dsl.runtime import cuda as cuda_helpers

    raise cuda_helpers.create_cuda_runtime_error(code, cuda_helpers.cudart.cudaError_t)


def stream_handle(stream: Any, device: torch.device) -> int:
    """A raw CUstream handle from None (torch's current stream), a torch stream, a CUstream or an int."""
    if stream is None:
        if _raw_stream is not None:
            return _raw_stream(device.index if device.index is not None else torch.cuda.current_device())
        return torch.cuda.current_stream(device).cuda_stream
    if isinstance(stream, int):
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if handle is not None:
        return int(handle)
    return int(stream)  # cuda.bindings CUstream


class TableLayout:
    """One shape signature's host block of a seen-shape problem, computed once per template: the
    pointer table ``int64 [slots, 5]`` at byte 0 and the fourth table at ``aux_at`` (64-byte
    aligned), as the block's fixed 64-bit words (``base``: the fourth table's bytes where its
    template has :meth:`~kernel.seen_shapes.AuxTemplate.patches`) and one gather,
    ``block[words] = pointers[sources]``, for every pointer a problem writes into it."""

    def __init__(self, template: ShapeTemplate):
        index = template.pointer_index
        pointer_words = index.size
        self.pointer_shape = tuple(index.shape)
        self.pointer_strides = (index.shape[1], 1)
        aux = template.aux
        self.aux_at = -(-pointer_words * 8 // 64) * 64
        self.aux_end = self.aux_at + (aux.nbytes if aux is not None else 0)
        self.nbytes = -(-self.aux_end // 8) * 8
        self.base = np.zeros(self.nbytes // 8, dtype=np.int64)
        words, sources = [np.arange(pointer_words, dtype=np.int64)], [index.reshape(-1)]
        self.fill = self.aux_shape = self.aux_strides = None
        if aux is not None:
            patches = aux.patches()
            if patches is None:
                self.fill = aux.fill
            else:
                fixed, at, src = patches
                self.base.view(np.uint8)[self.aux_at:self.aux_end] = fixed
                words.append(self.aux_at // 8 + np.asarray(at, dtype=np.int64))
                sources.append(np.asarray(src, dtype=np.int64))
            self.aux_shape = tuple(aux.shape)
            strides = [1]
            for extent in reversed(self.aux_shape[1:]):
                strides.append(strides[-1] * extent)
            self.aux_strides = tuple(reversed(strides))
        self.words = np.concatenate(words) if len(words) > 1 else words[0]
        self.sources = np.concatenate(sources) if len(sources) > 1 else sources[0]


class HostPipeline:
    """The shared host flow of one kernel family (see the module docstring)."""

    def __init__(self, hooks: FamilyHooks, *, fast_path: FastPath | None = None, table_capacity: int = 256):
        self.hooks = hooks
        self.compile_cache: CompileCache = CompileCache(hooks.name)
        self.table_cache = TableCache(table_capacity)
        self.fast_path = fast_path if fast_path is not None else FastPath()
        self.templates = ShapeTemplates()
        # the seen-shape path's native pass where kernel.native_probe is loaded (False: the Python
        # path only; same decisions, same tables). It stages and uploads as host_buffer and upload
        # do, so a subclass that replaces either of them keeps the Python path
        self.native_seen = True
        self._production_staging = (type(self).host_buffer is HostPipeline.host_buffer
                                    and type(self).upload is HostPipeline.upload)
        self.lane_calls = 0  # first calls launched through run()'s lane (_run_seen)

    # ---- compile ----------------------------------------------------------------------------
    def compile_key(self, config: Any, num_groups: int, perturbation: Any = None, ablation: Any = None) -> Hashable:
        """``(config, num_groups)`` in production; a perturbed or ablated build is its own entry."""
        key = (self.hooks.resolve(config), num_groups)
        if perturbation is None and ablation is None:
            return key
        # a run-time perturbation's seed is data: every seed shares its compile form's build
        return key + (getattr(perturbation, "compile_form", perturbation), ablation)

    def compile_for(self, config: Any, num_groups: int, perturbation: Any = None, ablation: Any = None) -> Any:
        """The compiled kernel of ``(config, num_groups)``, from the cache or compiled now (no GPU needed)."""
        resolved = self.hooks.resolve(config)
        max_groups = self.hooks.constraints(resolved).max_groups
        if not 1 <= num_groups <= max_groups:
            from kernel.errors import UnsupportedConfigError

            raise UnsupportedConfigError(resolved.label, [f"num_groups={num_groups} outside 1..{max_groups}"])
        return self.compile_cache.get_or_compile(
            self.compile_key(resolved, num_groups, perturbation, ablation),
            lambda: self.hooks.build(resolved, num_groups, perturbation=getattr(perturbation, "compile_form", perturbation),
                                     ablation=ablation),
        )

    # ---- prepare / launch ---------------------------------------------------------------------
    def prepare(self, data: Any, config: Any, *, dry_run: bool = False, compile: bool | None = None,
                perturbation: Any = None, strict: bool = False, ablation: Any = None,
                tensors: list | None = None) -> Prepared:
        """Everything but the launch.

        ``dry_run=True`` takes tensors on the CPU (or anywhere): it validates against the
        family's constraints for the data's device, plans as the target GPU would, builds the
        tables on the data's device and compiles only when ``compile=True``.

        A problem whose shape signature passed full validation before takes the seen-shape path
        (:mod:`kernel.seen_shapes`): only the address rules are checked, the plan and the sizes
        tables are reused, and the pointers and tensor maps go to the GPU in one copy.
        ``tensors``: the problem's flat tensor list when the caller has it already (a list the
        caller does not change afterwards: a seen-shape preparation keeps it, unpacked per group
        when first read).
        """
        # harness builds (perturbed, ablated, strict) take the full path and teach it nothing
        production = not dry_run and not strict and perturbation is None and ablation is None
        if production and compile is not False:
            seen = self._prepare_seen(data, config, tensors)
            if seen is not None:
                return seen
        resolved = self.hooks.resolve(config)
        constraints = self.hooks.constraints(resolved)
        if dry_run:
            constraints = replace(constraints, device_type=_data_device_type(data))
        groups = validate_problem(data, constraints)
        max_ctas = self.hooks.max_ctas(resolved, dry_run=dry_run)
        if getattr(perturbation, "max_ctas", 0) and max_ctas:  # harness builds: a few persistent CTAs
            max_ctas = min(max_ctas, perturbation.max_ctas)
        plan = make_plan(
            [g.size for g in groups],
            tile_m=resolved.tile_m,
            tile_n=resolved.tile_n,
            tile_k=resolved.tile_k,
            max_ctas=max_ctas,
            schedule=resolved.schedule,
        )
        device = groups[0].c.device
        tables = aux = compiled = template = upload_stream = None
        if plan.total_tiles:
            if production:
                # the signature is learned first, and this problem's pointer table and fourth table
                # are built through it, as every later problem of these shapes will be (the tensor
                # maps are encoded once, in the template)
                template, tables, aux, upload_stream = self._learn(
                    tensors if tensors is not None else flatten(data), config, resolved, constraints, groups,
                    plan, device)
            else:
                tables = self.table_cache.get(plan, groups, device, strict=strict)
                if not dry_run:
                    aux = self.hooks.aux_table(resolved, plan, groups, device, strict=strict)
            if compile if compile is not None else not dry_run:
                compiled = self.compile_for(resolved, plan.num_groups, perturbation, ablation)
                if template is not None:
                    template.compiled = compiled  # the production build
        delay_table = None
        if getattr(perturbation, "runtime", False) and plan.total_tiles:  # the seed's table, as data
            delay_table = torch.tensor(perturbation.device_words(), dtype=torch.int32, device=device)
        return Prepared(resolved, groups, plan, tables, aux, compiled, [g.c for g in groups], dry_run,
                        perturbation=perturbation, strict=strict, ablation=ablation, upload_stream=upload_stream,
                        template=template if compiled is not None else None, delay_table=delay_table)

    # ---- the seen-shape path (kernel.seen_shapes) ----------------------------------------------
    def _learn(self, tensors, config, resolved, constraints, groups, plan, device) -> tuple:
        """Keep what this validated problem's signature fixes, for later problems of the same
        shapes (``tensors``: the problem's flat tensor list), and build this problem's tables
        through it: ``(template, tables, aux, upload stream)``."""
        sizes = tuple(g.size for g in groups)
        template = ShapeTemplate.learn(config, resolved, sizes, tensors, constraints, plan)
        template.sizes_table, template.prefix_table = self.table_cache.immutable(plan, device)
        make = getattr(self.hooks, "aux_template", None)
        template.aux = make(resolved, plan, groups) if make is not None else None
        aux = None
        if template.aux is None:  # no fourth table, or one the family builds per problem
            aux = self.hooks.aux_table(resolved, plan, groups, device)
            template.aux_per_problem = aux is not None
        self.templates.store(template)
        tables, seen_aux, upload_stream = self.seen_tables(template, list(map(torch.Tensor.data_ptr, tensors)), device)
        return template, tables, aux if aux is not None else seen_aux, upload_stream

    def _prepare_seen(self, data, config, tensors) -> Prepared | None:
        template = self.templates.find(config, data[3]) if isinstance(data, (tuple, list)) and len(data) == 4 else None
        if template is None:
            return None
        if tensors is None:
            try:
                tensors = flatten(data)
            except Exception:
                return None
        # the native pass (kernel.native_probe.SEEN_TABLES): accept and seen_tables in one C++ call
        # for problems in its domain; None (a broken rule, anything unusual) leaves the decision to
        # the Python accept below, so the accepted set and every error are the Python path's
        native = native_probe.SEEN_TABLES if self.native_seen and self._production_staging else None
        if native is not None:
            state = template.native_state
            if state is None:
                state = template.native_state = _native_state(template)
            try:
                done = native(state, data, tensors) if state else None
            except Exception:  # e.g. out of memory: the Python path below meets it again, or not
                done = None
            if done is not None:
                template.stats["accepted"] += 1
                device = template.devices[2]  # group 0's c: what tensors[2].device equals
                pointer_view, aux_view = done
                # DeviceTables(...) and AuxTable(...) without the frozen dataclasses' __init__
                tables = _frozen(DeviceTables, {"sizes": template.sizes_table, "tile_prefix": template.prefix_table,
                                                "pointers": pointer_view, "guard_rows": 0})
                aux = None if aux_view is None else _frozen(
                    AuxTable, {"tensor": aux_view, "element": template.aux.element, "align": 64})
                upload_stream = self.stream_handle(None, device) if device.type == "cuda" else None
                return self._seen_prepared(template, data, tensors, device, tables, aux, upload_stream)
        pointers = template.accept(data, tensors)
        if pointers is None:
            return None
        device = tensors[2].device  # group 0's c: every tensor is on the template's device
        tables, aux, upload_stream = self.seen_tables(template, pointers, device)
        return self._seen_prepared(template, data, tensors, device, tables, aux, upload_stream)

    def _seen_prepared(self, template, data, tensors, device, tables, aux, upload_stream) -> Prepared:
        groups = template.groups(tensors)
        if template.aux_per_problem:
            aux = self.hooks.aux_table(template.config, template.plan, groups, device)
        if template.compiled is None:
            template.compiled = self.compile_for(template.config, template.num_groups)
        return _prepared(template.config, groups, template.plan, tables, aux, template.compiled,
                         tensors[2:3 * template.num_groups:3], upload_stream, template)

    def seen_tables(self, template: ShapeTemplate, pointers: Any,
                    device: torch.device) -> tuple[DeviceTables, "AuxTable | None", int | None]:
        """The pointer table (and the patched fourth table) of a seen-shape problem, in one copy:
        ``(tables, aux, stream of the copy or None when it was synchronous)``. ``pointers``: the
        problem's flat data pointers (what :meth:`ShapeTemplate.accept` returns)."""
        layout = template.layout
        if layout is None:
            layout = template.layout = TableLayout(template)
        pointers = np.asarray(pointers, dtype=np.int64)
        host = self.host_buffer(layout.nbytes, device)
        view = host.numpy()
        words = view.view(np.int64)
        words[:] = layout.base  # the fourth table's fixed bytes
        words[layout.words] = pointers[layout.sources]  # the pointer table and the patched addresses
        if layout.fill is not None:
            layout.fill(view[layout.aux_at:layout.aux_end], pointers)
        stored, upload_stream = self.upload(host, device)
        if stored.data_ptr() % 64:
            raise RuntimeError("seen-shape table block is not 64-byte aligned")
        at = stored.storage_offset()
        tables = DeviceTables(template.sizes_table, template.prefix_table,
                              stored.view(torch.int64).as_strided(layout.pointer_shape, layout.pointer_strides, at // 8))
        aux = None
        if layout.aux_shape is not None:
            aux = AuxTable(stored.as_strided(layout.aux_shape, layout.aux_strides, at + layout.aux_at),
                           template.aux.element, 64)
        return tables, aux, upload_stream

    # the CUDA touch points of the seen-shape path (the CPU double of the tests keeps them on the CPU)
    def host_buffer(self, nbytes: int, device: torch.device) -> torch.Tensor:
        """A host staging buffer: page-locked for a GPU, so the copy need not wait."""
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=device.type == "cuda")

    def upload(self, host: torch.Tensor, device: torch.device) -> tuple[torch.Tensor, int | None]:
        """Copy ``host`` to ``device`` on torch's current stream without waiting; torch keeps the
        page-locked buffer from reuse until the copy is done. Returns the device tensor and the
        raw stream of the copy."""
        if device.type != "cuda":
            return host.to(device, copy=True), None
        return host.to(device, non_blocking=True), self.stream_handle(None, device)

    def launch(self, prepared: Prepared, stream: Any = None) -> list[torch.Tensor]:
        """Launch on ``stream`` (default: torch's current stream); no synchronization.

        Returns the caller's ``c`` tensors in the caller's order (written in place).
        """
        if prepared.plan.total_tiles == 0:
            return list(prepared.outputs)  # every group is empty: nothing to write
        if prepared.dry_run:
            raise DeviceUnavailableError(f"{self.hooks.name}: a dry-run preparation cannot be launched")
        reason = self.hooks.unavailable_reason()
        if reason is not None:
            raise DeviceUnavailableError(reason)
        return self._launch(prepared, stream)

    def _launch(self, prepared: Prepared, stream: Any) -> list[torch.Tensor]:
        """:meth:`launch` of a production preparation with tiles, on a machine that can run the
        family (:meth:`run` checked it before preparing)."""
        template = prepared.template
        # the tables' device: a seen-shape preparation's is its template's (no torch.device made)
        handle = self.stream_handle(stream, template.devices[2] if template is not None
                                    else prepared.tables.sizes.device)
        if prepared.upload_stream is not None and prepared.upload_stream != handle:
            _after_upload(prepared, handle)
        args = prepared.launch_args
        if args is None or args.stream != handle:
            args = self.marshal(prepared, handle)
            object.__setattr__(prepared, "launch_args", args)
        args.launch()
        return list(prepared.outputs)

    def raise_protocol_violations(self, prepared: Prepared) -> None:
        """A harness build with the happens-before checker (``Perturbation.checks``): wait for the
        launch (every stream of the device) and read the checker's record from the device table;
        raise :class:`kernel.errors.ProtocolViolation` when the kernel broke a rule."""
        from kernel.perturbation import CheckRecord

        table = prepared.delay_table
        if table.device.type == "cuda":
            torch.cuda.synchronize(table.device)
        record = CheckRecord.from_words(table.tolist())
        if not record.clean:
            label = getattr(prepared.config, "label", str(prepared.config))
            raise ProtocolViolation(f"{label}~{prepared.perturbation.tag}", record)

    # the two places that touch CUDA directly (a CPU test double of the pipeline replaces them)
    def stream_handle(self, stream: Any, device: torch.device) -> int:
        return stream_handle(stream, device)

    def marshal(self, prepared: Prepared, handle: int) -> LaunchArgs:
        template = prepared.template
        if template is not None:
            proto = template.launch_protos.get(handle)
            pointers = prepared.tables.pointers.data_ptr()
            if proto is not None:
                return proto.rebased(pointers, pointers // 64 * 64 if prepared.aux is None
                                     else prepared.aux.tensor.data_ptr())
        workspace = None
        make_workspace = getattr(self.hooks, "workspace", None)
        if make_workspace is not None:  # one per (stream, workspace geometry): FamilyHooks.workspace
            workspace = make_workspace(prepared.config, prepared.plan, handle, prepared.tables.sizes.device)
        args = LaunchArgs(prepared.compiled, prepared.tables, prepared.aux, prepared.plan.num_ctas, handle,
                          prepared.delay_table, workspace)
        if template is not None and args.rebasable and len(template.launch_protos) < 8:
            template.launch_protos[handle] = args
        return args

    def run(self, data: Any, config: Any, stream: Any = None, *, perturbation: Any = None,
            strict: bool = False) -> list[torch.Tensor]:
        """``custom_kernel``: the fast path on a repeated problem, else prepare + launch.
        ``config`` may be a family's per-shape choice (a hooks ``choose(config, data)`` turns it
        into a variant): the fast path keys on it as given, so a repeated call pays no choice;
        a miss chooses once, and its entry is stored under the key of the config as given."""
        choose = getattr(self.hooks, "choose", None)
        if perturbation is not None or strict:  # harness builds: always the full path, never cached
            reason = self.hooks.unavailable_reason()
            if reason is not None:
                raise DeviceUnavailableError(reason)
            if choose is not None:
                config = choose(config, data)
            prepared = self.prepare(data, config, perturbation=perturbation, strict=strict)
            outputs = self.launch(prepared, stream)
            if getattr(perturbation, "checks", False) and prepared.delay_table is not None:
                self.raise_protocol_violations(prepared)
            return outputs
        hit, tensors, key = self.fast_path.probe(data, config, stream)
        if hit is not None:
            hit.launch_args.launch()
            return hit.outputs(tensors)
        reason = self.hooks.unavailable_reason()
        if reason is not None:
            raise DeviceUnavailableError(reason)
        if choose is not None:
            config = choose(config, data)  # the entry is stored under the probe's key (the config as given)
        if stream is None and tensors is not None:
            outputs = self._run_seen(data, config, tensors, key)
            if outputs is not None:
                return outputs
        prepared = self.prepare(data, config, tensors=tensors)
        if prepared.plan.total_tiles == 0:
            return list(prepared.outputs)  # every group is empty: nothing to write (nothing stored)
        outputs = self._launch(prepared, stream)  # availability checked above
        if prepared.launch_args is not None:
            self.fast_path.store(data, config, stream, prepared.launch_args, keep=(prepared.tables, prepared.aux),
                                 tensors=tensors, key=key)
        return outputs

    def _run_seen(self, data: Any, config: Any, tensors: list, key: Any) -> list[torch.Tensor] | None:
        """:meth:`run`'s first call on new tensors of seen shapes on torch's current stream, in
        one lane: the native pass (the same decision and block as :meth:`prepare`'s), the launch
        arguments rebased from the stream's prototype (what :meth:`marshal` does for it), the
        launch and the fast-path store, without a :class:`Prepared`, its tables' dataclasses or
        its groups. Taken only where prepare + launch would do exactly that: the native pass is
        in use, the template has its compiled kernel, no per-problem fourth table and a rebasable
        prototype for the stream (:meth:`marshal` keeps them; a subclass that never stores one
        never gets this lane). Returns the caller's ``c`` tensors, or None when not taken (nothing
        done) or when the native pass declines (then :meth:`prepare` decides, running it again)."""
        if not (isinstance(data, (tuple, list)) and len(data) == 4):
            return None
        native = native_probe.SEEN_TABLES if self.native_seen and self._production_staging else None
        if native is None:
            return None
        template = self.templates.find(config, data[3])
        if template is None or template.compiled is None or template.aux_per_problem:
            return None
        # the copy's stream is the launch's (torch's current one): no wait between them
        proto = template.launch_protos.get(self.stream_handle(None, template.devices[2]))
        if proto is None:
            return None
        state = template.native_state
        if state is None:
            state = template.native_state = _native_state(template)
        if not state:
            return None
        try:
            done = native(state, data, tensors)
        except Exception:  # e.g. out of memory: prepare meets it again, or not
            return None
        if done is None:
            return None
        template.stats["accepted"] += 1
        self.lane_calls += 1
        pointer_view, aux_view = done
        pointers = pointer_view.data_ptr()
        args = proto.rebased(pointers, pointers // 64 * 64 if aux_view is None else aux_view.data_ptr())
        args.launch()
        # the entry keeps every table its arguments point at (the template's may be evicted)
        self.fast_path.store(data, config, None, args,
                             keep=(template.sizes_table, template.prefix_table, pointer_view, aux_view),
                             tensors=tensors, key=key)
        return tensors[2:3 * template.num_groups:3]

    def clear(self) -> None:
        """Forget every compiled kernel, table, shape template and fast-path entry (tests; after
        swapping tensor storage)."""
        self.compile_cache.clear()
        self.table_cache.clear()
        self.templates.clear()
        self.fast_path.clear()


def _native_state(template: ShapeTemplate) -> Any:
    """The native pass's capsule of ``template`` (kernel.native_probe.SEEN_STATE: its signature,
    address-check arrays and :class:`TableLayout`), or False: no native module, a fourth table
    filled by code (``AuxTemplate.fill``), or anything the module refuses."""
    make = native_probe.SEEN_STATE
    if make is None:
        return False
    layout = template.layout
    if layout is None:
        layout = template.layout = TableLayout(template)
    if layout.fill is not None:
        return False
    overlap = template.overlap

    def words(a) -> bytes:
        return np.ascontiguousarray(a, dtype=np.int64).tobytes()

    try:
        return make(template.num_groups, template.dtypes, template.shapes, template.strides, template.devices,
                    words(template.nonempty), words(overlap.extents), words(overlap.outputs),
                    words(overlap.limits.reshape(-1)), template.align_mask, words(layout.base),
                    words(layout.words), words(layout.sources), layout.pointer_shape, layout.pointer_strides,
                    layout.aux_at, layout.aux_shape, layout.aux_strides, template.devices[2])
    except Exception:
        return False


def _after_upload(prepared: Prepared, handle: int) -> None:
    """A launch on stream ``handle`` of tables copied on another stream: wait for the copy, and
    tell the allocator the launch stream uses them (they must outlive its kernel)."""
    copy_stream = torch.cuda.ExternalStream(prepared.upload_stream)
    copy_stream.synchronize()
    launch_stream = torch.cuda.ExternalStream(handle)
    for t in (prepared.tables.pointers, prepared.aux.tensor if prepared.aux is not None else None):
        if t is not None:
            t.record_stream(launch_stream)
    object.__setattr__(prepared, "upload_stream", None)


def _data_device_type(data: Any) -> str:
    try:
        return data[0][0][0].device.type
    except (IndexError, TypeError, AttributeError, KeyError):
        return "cuda"

