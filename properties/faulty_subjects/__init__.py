"""Planted faulty subjects (see README.md): each file is a ``--subject=path`` subject that faults,
hangs or answers wrongly on some shapes, to prove the fault-isolating runner."""
