"""Whole names packed back to back into rows of tokens, so no training compute is spent on padding.

A padded window of a short name is mostly padding; packed rows hold several windows each, every one
attending only to itself, and compute exactly what the separate windows would (`PackedRows`; about
1.6x more characters per second than padded windows on a CPU).
"""

from __future__ import annotations

import torch

from core.data import IGNORE_INDEX


class PackedRows:
    """Training windows packed whole into rows of `row_length` tokens, rebuilt every epoch.

    A window of a short name is mostly padding: with 12 positions and names of ~6 letters, about 40% of
    the compute of a batch would be spent on it. Here several windows sit back to back in one row;
    `positions` restart at 0 for each window and the attention mask lets a position attend only to
    earlier positions of its own window. So a packed row computes exactly what the separate windows
    would (same logits, same loss), with padding only at the end of each row. Every epoch the windows
    are shuffled with the trainer's generator and packed again (next-fit, in that order).

    The epoch's rows are built on `device` (a GPU builds them itself, no copy per step). On a GPU the
    attention masks of the whole epoch are built at once too (R x P x P booleans, a few MB); on the
    CPU each batch builds its own, which costs little there and keeps memory low for many sessions.
    """

    def __init__(
        self,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        row_length: int,
        generator: torch.Generator,
        device: torch.device | str = "cpu",
    ):
        self.device = torch.device(device)
        self.inputs, self.targets = inputs.to(self.device), targets.to(self.device)  # (N, T), (N, T)
        self.lengths = (targets.cpu() != IGNORE_INDEX).sum(dim=1)  # (N,) real positions per window, on the CPU
        self.row_length = row_length
        self.generator = generator
        self.epoch_start_state: torch.Tensor | None = None  # generator state the current epoch was packed from
        self.cursor = 0  # next unused row of the current epoch
        self.rows: tuple[torch.Tensor, ...] | None = None  # inputs, targets, positions, segments: (R, P) each
        self.row_tokens: torch.Tensor | None = None  # (R,) real targets per row, on the CPU (no sync to count)
        self.masks: torch.Tensor | None = None  # (R, 1, P, P) the epoch's attention masks (GPU only)
        # True on and below the diagonal: built once, shared by every batch
        self.causal = torch.ones(row_length, row_length, dtype=torch.bool, device=self.device).tril()  # (P, P)

    def _next_fit(self, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(row of each window (N,), first window of each row (R,)) when windows of `lengths` fill rows
        in order, a new row whenever the next window does not fit.

        Where each row starts is found for every window at once (the furthest window whose end still fits
        in a row starting there: a binary search in the running total); only the chain of row starts,
        one step per row, is followed in Python.
        """
        ends = torch.cumsum(lengths, 0)  # (N,) running total after each window
        starts = ends - lengths  # (N,) running total before each window
        # a row starting at window i holds windows i .. next_start[i] - 1
        next_start = torch.searchsorted(ends, starts + self.row_length, right=True).tolist()  # (N,)
        row_starts, first, n = [], 0, len(lengths)
        while first < n:
            row_starts.append(first)
            first = next_start[first]
        row_starts = torch.tensor(row_starts)  # (R,)
        is_row_start = torch.zeros(n, dtype=torch.long).index_fill_(0, row_starts, 1)  # (N,)
        return torch.cumsum(is_row_start, 0) - 1, row_starts  # (N,), (R,)

    def pack_epoch(self) -> None:
        """Shuffle the windows with the generator and pack them into this epoch's rows."""
        self.epoch_start_state = self.generator.get_state()
        order = torch.randperm(len(self.inputs), generator=self.generator)  # (N,)
        lengths = self.lengths[order]  # (N,)
        row_of, row_starts = self._next_fit(lengths)  # (N,), (R,)
        starts = torch.cumsum(lengths, 0) - lengths  # (N,) where each window starts in the flat stream
        offset_of = starts - starts[row_starts][row_of]  # (N,) where each window starts in its row
        n_rows = len(row_starts)
        self.row_tokens = torch.zeros(n_rows, dtype=torch.long).index_add_(0, row_of, lengths)  # (R,)

        # the scatter of tokens into rows runs where the rows live
        dev = self.device
        lengths_d, starts_d, order_d = lengths.to(dev), starts.to(dev), order.to(dev)  # (N,) each
        total = int(self.row_tokens.sum())
        flat_window = torch.repeat_interleave(torch.arange(len(order), device=dev), lengths_d, output_size=total)  # (total,)
        within = torch.arange(total, device=dev) - starts_d[flat_window]  # (total,) position inside the window
        dest_row = row_of.to(dev)[flat_window]  # (total,)
        dest_col = offset_of.to(dev)[flat_window] + within  # (total,)
        source = order_d[flat_window]  # (total,) row of the window in the training windows

        shape = (n_rows, self.row_length)
        inputs = torch.zeros(shape, dtype=torch.long, device=dev)  # (R, P) padding: "." (id 0)
        targets = torch.full(shape, IGNORE_INDEX, dtype=torch.long, device=dev)  # (R, P)
        positions = torch.zeros(shape, dtype=torch.long, device=dev)  # (R, P)
        segments = torch.full(shape, -1, dtype=torch.long, device=dev)  # (R, P) which window; -1 = padding
        inputs[dest_row, dest_col] = self.inputs[source, within]
        targets[dest_row, dest_col] = self.targets[source, within]
        positions[dest_row, dest_col] = within
        segments[dest_row, dest_col] = flat_window
        self.rows = (inputs, targets, positions, segments)
        self.masks = None if dev.type == "cpu" else self._attn_mask(segments)  # (R, 1, P, P)
        self.cursor = 0

    def _attn_mask(self, segments: torch.Tensor) -> torch.Tensor:
        """(B, 1, P, P) True where a query may attend to a key: an earlier position of its own window."""
        same_window = segments[:, :, None] == segments[:, None, :]  # (B, P, P)
        return (same_window & self.causal).unsqueeze(1)  # (B, 1, P, P)

    def sample(self, n_rows: int, device: torch.device | None = None):
        """(inputs, targets, positions) (B, P) and attn_mask (B, 1, P, P) for the next n_rows rows.

        `device` is where the model is; the rows are already there when it is this object's device.
        """
        inputs, targets, positions, attn_mask, _ = self.sample_counted(n_rows, device)
        return inputs, targets, positions, attn_mask

    def sample_counted(self, n_rows: int, device: torch.device | None = None):
        """Like `sample`, plus the number of real targets in the batch (an int counted on the CPU)."""
        if self.rows is None or self.cursor + n_rows > len(self.rows[0]):
            self.pack_epoch()
        rows = slice(self.cursor, self.cursor + n_rows)
        self.cursor += n_rows
        n_tokens = int(self.row_tokens[rows].sum())
        inputs, targets, positions, segments = (t[rows] for t in self.rows)  # (B, P) each
        attn_mask = self._attn_mask(segments) if self.masks is None else self.masks[rows]  # (B, 1, P, P)
        if device is not None and torch.device(device) != self.device:
            inputs, targets, positions, attn_mask = (t.to(device) for t in (inputs, targets, positions, attn_mask))
        return inputs, targets, positions, attn_mask, n_tokens
