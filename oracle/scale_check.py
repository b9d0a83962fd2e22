"""Check that the reordered (blocked) scales say what the row-major scales say.

The reference reads only the row-major scales, so a generator bug in the blocked copy (which is
what the Blackwell kernel reads) would otherwise go unseen.
"""

import torch

from .formats import as_uint8
from .layouts import ROW_PAD_NAN, COL_PAD_ZERO, blocked_buffer, blocked_rests, from_blocked


def check_blocked_scales(data, *, check_padding: bool = True) -> list[str]:
    """Reasons the blocked scales disagree with the row-major ones; empty when they agree.

    Checks shape, dtype, memory order (the blocked tensor must be the permuted view of a
    contiguous buffer), every real element, and with check_padding our padding convention
    (rows >= mn are 0x7F, other padded columns 0). Pass check_padding=False for data from the
    leaderboard's own generator, which pads with random bytes.
    """
    problems = []
    for group, ((sfa, sfb), (sfa_r, sfb_r), (m, n, k, _)) in enumerate(
            zip(data[1], data[2], data[3])):
        for name, rowmajor, blocked, rows in (("a", sfa, sfa_r, m), ("b", sfb, sfb_r, n)):
            where = f"group {group} sf{name}"
            k16 = k // 16
            rest_m, rest_k = blocked_rests(rows, k16)
            expected_shape = (32, 4, rest_m, 4, rest_k, 1)
            if tuple(blocked.shape) != expected_shape:
                problems.append(f"{where}: blocked shape {tuple(blocked.shape)}, "
                                f"expected {expected_shape}")
                continue
            if blocked.dtype != torch.float8_e4m3fn:
                problems.append(f"{where}: blocked dtype {blocked.dtype}, expected float8_e4m3fn")
            if not blocked_buffer(blocked).is_contiguous():
                problems.append(f"{where}: blocked tensor is not the permute(3,4,1,5,2,0) view "
                                f"of a contiguous buffer (strides {blocked.stride()})")
            padded = as_uint8(from_blocked(blocked, rows, k16, keep_padding=True))
            real = as_uint8(rowmajor.to(padded.device).reshape(rows, k16))  # plain scales may be host memory
            bad = (padded[:rows, :k16] != real).nonzero()
            if len(bad):
                i, j = bad[0].tolist()
                problems.append(f"{where}: {len(bad)} scales differ, first at [{i}, {j}]: "
                                f"row-major {int(real[i, j]):#04x}, "
                                f"blocked {int(padded[i, j]):#04x}")
            if check_padding:
                if bool((padded[rows:] != ROW_PAD_NAN).any()):
                    problems.append(f"{where}: padded rows >= {rows} are not all 0x7F")
                if bool((padded[:rows, k16:] != COL_PAD_ZERO).any()):
                    problems.append(f"{where}: padded columns >= {k16} are not all 0")
    return problems
