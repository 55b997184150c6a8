"""The utilisation plot: one node's (monitor.py, on the node) or a whole run's (scripts/report.py).

Two panels over the run's minutes: utilisation (each accelerator or node, CPU busy, I/O wait, the
guide's 70% line) and accelerator memory used, a title that says what ran where and when, and the
diagnosis as a caption underneath. matplotlib is optional on a node: `draw` raises ImportError
without it and the caller says so in the summary.
"""
import textwrap
import time

from .diagnosis import UTIL_LINE


def utc(t):
    return time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t)) if t else '?'


def title(stack, who, instance_type, accelerators, began, ended):
    """'stack - node (type, 8x A100) / 2026-12-04 01:00 UTC to 03:10 UTC'."""
    end = utc(ended)
    if utc(began)[:10] == end[:10]:
        end = end[11:]
    return f'{stack} - {who} ({instance_type or "?"}, {accelerators})\n{utc(began)} to {end}'


def draw(path, heading, caption_text, util, memory, host=()):
    """Write the PNG; what it shows: {title, caption, lines: [labels]}.

    util and memory: [(label, [minutes], [percent])]; host: CPU busy / I/O wait / data-loader wait lines.
    """
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt

    lines = textwrap.wrap(caption_text, 110) or ['']
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.2 + 0.18 * len(lines)), sharex=True,
                                      gridspec_kw={'height_ratios': (3, 1.4)})
    try:
        for label, xs, ys in util:
            top.plot(xs, ys, label=label, linewidth=1.2)
        for label, xs, ys in host:
            top.plot(xs, ys, label=label, linewidth=0.9, linestyle=':')
        top.axhline(UTIL_LINE, color='red', linestyle='--', linewidth=1, label=f'{UTIL_LINE}% (the guide)')
        top.set_ylim(0, 105)
        top.set_ylabel('utilisation %')
        # Inside the axes whatever the labels (36-character instance ids): the box spans the axes' width
        # (mode='expand'), and long labels take fewer columns.
        wide = max((len(line.get_label()) for line in top.get_lines()), default=0) > 24
        top.legend(loc='lower left', bbox_to_anchor=(0, 0, 1, 1), mode='expand', fontsize=7, ncol=2 if wide else 4,
                   framealpha=0.85)
        top.set_title(heading, fontsize=10)
        for label, xs, ys in memory:
            bottom.plot(xs, ys, label=label, linewidth=1.2)
        bottom.set_ylim(0, 105)
        bottom.set_ylabel('GPU memory %')
        bottom.set_xlabel('minutes since the first sample')
        if memory:
            # Upper right: the memory lines of a small model sit near 0%, under a lower-left box.
            bottom.legend(loc='upper right', fontsize=7, ncol=2, framealpha=0.85)
        else:
            bottom.text(0.5, 0.5, 'memory not reported by the accelerator tool', ha='center', va='center',
                        transform=bottom.transAxes, fontsize=8)
        fig.text(0.01, 0.01, '\n'.join(lines), fontsize=7.5, va='bottom', ha='left', family='monospace')
        fig.tight_layout(rect=(0, 0.03 + 0.022 * len(lines), 1, 1))
        fig.savefig(path, dpi=90)
        labels = [line.get_label() for ax in (top, bottom) for line in ax.get_lines()]
        renderer = fig.canvas.get_renderer()
        # Where each panel's legend landed, in pixels, next to its axes: (x0, y0, x1, y1) each.
        boxes = [(tuple(ax.get_legend().get_window_extent(renderer).extents), tuple(ax.get_window_extent(renderer).extents))
                 for ax in (top, bottom) if ax.get_legend() is not None]
        return {'title': top.get_title(), 'caption': fig.texts[0].get_text(), 'lines': labels, 'legends': boxes}
    finally:
        plt.close(fig)
