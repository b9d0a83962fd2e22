"""``epilogue="smem"``: the staged epilogue's shared-memory layout.

Pure arithmetic (``+ * // % ^ <<`` only), so the same functions run on Python ints (the CPU model
of kernel/tests/test_hopper_staging.py) and on CuTe DSL Int32 values (the kernel computes its
addresses with them): a layout slip shows on the CPU, without a GPU.

The accumulator (swapped tiles: wgmma computes C^T, its M side is N of C, its N side M of C).
Consumer thread ``tid`` (warpgroup ``w = tid // 128``, warp ``v = tid // 32 % 4``, lane ``l``)
holds value ``i = c2 + 2 r2 + 4 nb`` of the m64nNk16 fp32 fragment at wgmma row
``64 w + 16 v + l // 4 + 8 r2`` and wgmma column ``8 nb + 2 (l % 4) + c2`` (:func:`acc_coord`;
checked against the tiled MMA's own ``partition_C`` coordinates by the compile test). Swapped,
that is C row ``m0 + wgmma column`` and C column ``n0 + wgmma row``: the pair ``c2 = 0, 1`` sits
in two adjacent rows of C, one column.

Staging buffer: one per consumer warpgroup, ``rows`` rows of C (a pass; ``epilogue_stage_rows``
in config.py) by the warpgroup's 64 columns of C, fp16, row-major: 128-byte rows of eight
16-byte chunks, chunk ``c`` of row ``r`` stored at chunk ``c ^ (r % 8)`` (:func:`swizzled`).

Writes: ``stmatrix.sync.aligned.m8n8.x4.trans.shared.b16``. For an 8x8 fp16 matrix the fragment
of lane ``l`` is one 32-bit register holding fragment row ``l // 4``, columns ``2 (l % 4)`` (low
half) and ``+1`` (high half); ``.trans`` stores fragment column ``k`` as memory row ``k`` at the
address that lane ``8 j + k`` gives for matrix ``j``. A warp's 8x8 block ``(r2, nb)`` of the
accumulator (fragment rows = 8 wgmma rows = 8 columns of C, fragment columns = 8 wgmma columns
= 8 rows of C) is such a fragment, so each memory row written is 8 consecutive columns of one row
of C: one 16-byte chunk. Call ``q`` of pass ``p`` stores matrices ``j = r2 + 2 dn`` for
``nb = p * rows / 8 + 2 q + dn`` (:func:`stmatrix_values`): rows ``16 q .. 16 q + 15`` of the
pass, chunks ``2 v`` and ``2 v + 1``. The 8 rows of one matrix are 8 consecutive rows of C with
the same chunk, which the swizzle spreads over 8 different 16-byte bank groups (conflict-free).

Reads and stores: step ``it`` of a pass, warpgroup thread ``wtid`` loads chunk ``wtid % 8`` of
pass row ``16 it + wtid // 8`` (one ``ld.shared.v4``; a quarter warp reads one whole row, 8 bank
groups) and stores it as 8 fp16 at C row ``m0 + p * rows + 16 it + wtid // 8``, columns
``n0 + 64 w + 8 (wtid % 8) ..+7``: a warp stores four whole 128-byte row segments of C.
"""

ROW_BYTES = 128  # 64 fp16 columns of C per consumer warpgroup (config.EPILOGUE_WG_COLS)
CHUNK_BYTES = 16  # 8 fp16: one stmatrix row, one ld.shared.v4, one st.global.v4
ROWS_PER_STEP = 16  # rows one stmatrix.x4 call per warp covers, and one read step of 128 threads
STEP_BYTES = ROWS_PER_STEP * ROW_BYTES  # 2048: the offset between calls (writes) and steps (reads)


def acc_index(r2, nb, c2):
    """The m64nNk16 fp32 accumulator fragment's value index of (row half r2, 8-column block nb,
    column c2 of the pair)."""
    return c2 + 2 * r2 + 4 * nb


def acc_coord(tid, i):
    """(wgmma row, wgmma column) of value ``i`` of consumer thread ``tid`` (the model of
    ``tCcC[i]``; swapped: C column ``n0 +`` the first, C row ``m0 +`` the second)."""
    w, v, lane = tid // 128, tid // 32 % 4, tid % 32
    c2, r2, nb = i % 2, i // 2 % 2, i // 4
    return 64 * w + 16 * v + lane // 4 + 8 * r2, 8 * nb + 2 * (lane % 4) + c2


def swizzled(row, chunk):
    """Byte offset in a warpgroup's staging buffer of 16-byte chunk ``chunk`` (0..7) of ``row``."""
    return row * ROW_BYTES + ((chunk ^ (row % 8)) << 4)


def stmatrix_lane_offset(wtid):
    """Byte offset (in the warpgroup's buffer) of the row address lane ``wtid % 32`` gives to
    call 0 of a pass: matrix ``j = lane // 8``, its memory row ``k = lane % 8``, i.e. pass row
    ``8 (j // 2) + k`` and chunk ``2 v + j % 2``; call ``q`` adds ``q * STEP_BYTES`` (16 rows,
    the same ``row % 8``, so the same swizzle)."""
    v, lane = wtid // 32, wtid % 32
    j, k = lane // 8, lane % 8
    return swizzled(8 * (j // 2) + k, 2 * v + j % 2)


def stmatrix_values(p, q, rows):
    """The 8 accumulator indices call ``q`` of pass ``p`` (``rows`` rows of C per pass) stores,
    in operand order: register j holds (values[2j] low, values[2j+1] high), matrix j = r2 + 2 dn."""
    nb0 = p * rows // 8 + 2 * q
    out = []
    for j in range(4):
        r2, nb = j % 2, nb0 + j // 2
        out += [acc_index(r2, nb, 0), acc_index(r2, nb, 1)]
    return out


def read_lane_offset(wtid):
    """Byte offset (in the warpgroup's buffer) of the chunk thread ``wtid`` loads in step 0 of a
    pass; step ``it`` adds ``it * STEP_BYTES``."""
    return swizzled(wtid // 8, wtid % 8)


def read_row_col(wtid, it):
    """(pass row, column inside the warpgroup's 64) of the first of the 8 fp16 thread ``wtid``
    loads and stores in step ``it``."""
    return ROWS_PER_STEP * it + wtid // 8, 8 * (wtid % 8)


def calls_per_pass(rows):
    """stmatrix.x4 calls per thread, and read steps per thread, of one pass of ``rows`` rows."""
    return rows // ROWS_PER_STEP
