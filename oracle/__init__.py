"""Exact oracle for the NVFP4 block-scaled grouped GEMM: formats, inputs, reference, bounds."""

from .bounds import Expected, error_bound, exact_sum_mask, expected_outputs
from .compare import Report, Violation, check_outputs, compare
from .datautil import clone_data, data_to, output_tensors, replace_outputs
from .dequantize import dequantize, dequantize_operand, fp32_model_outputs
from .distributions import DISTRIBUTIONS, GroupCodes, draw_groups
from .formats import (E2M1_VALUES, as_e4m3, as_fp4x2, as_uint8, e2m1_decode, e2m1_twice,
                      e4m3_decode, e4m3_times_512, pack_e2m1, unpack_e2m1)
from .inputs import LAYOUTS, data_from_codes, make_inputs, place
from .layouts import blocked_offset, from_blocked, to_blocked
from .quantize import quantize_nvfp4
from .reference import reference, reference_exact
from .rounding import round_scaled_int_to_fp16, ulp16
from .scale_check import check_blocked_scales

__all__ = [
    "DISTRIBUTIONS", "E2M1_VALUES", "Expected", "GroupCodes", "LAYOUTS", "Report", "Violation",
    "as_e4m3", "as_fp4x2", "as_uint8", "blocked_offset", "check_blocked_scales",
    "check_outputs", "clone_data", "compare", "data_from_codes", "data_to", "dequantize",
    "dequantize_operand", "draw_groups", "e2m1_decode", "e2m1_twice", "e4m3_decode",
    "e4m3_times_512", "error_bound", "exact_sum_mask", "expected_outputs",
    "fp32_model_outputs", "from_blocked", "make_inputs", "output_tensors", "pack_e2m1", "place",
    "quantize_nvfp4", "reference", "reference_exact", "replace_outputs",
    "round_scaled_int_to_fp16", "to_blocked", "ulp16", "unpack_e2m1",
]
