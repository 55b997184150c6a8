"""Utilisation sampling (accelerators, CPU busy, I/O wait, the trainer's data-loader wait) to CSVs,
and the end-of-run report: summary.json with the diagnosis (diagnosis.py) and utilisation.png (plot.py).

The CSVs live in the agent's state dir, so a restarted agent keeps appending and the report covers
the whole run. utilisation.csv: one row per accelerator per sample. loader.csv: the trainer's own
figures (GPU_TRAINING_STATS_FILE, docs/training-contract.md), one row each time they change.
"""
import csv
import json
import os
import re
import subprocess
import time

from . import diagnosis, plot

COLS = 'time', 'gpu', 'util', 'memUsedMiB', 'memTotalMiB', 'cpuBusy', 'iowait'
LOADER_COLS = 'time', 'step', 'imagesPerSecond', 'dataWaitPercent', 'workers'


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None  # nvidia-smi prints [N/A] for fields a GPU does not report


def cpu():
    with open('/proc/stat') as f:
        return [int(x) for x in f.readline().split()[1:9]]


def mean(xs):
    xs = [v for v in map(num, xs) if v is not None]
    return round(sum(xs) / len(xs), 1) if xs else None


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=True).stdout


def read_csv(path, cols):
    """Rows of a CSV as dicts; rows cut short by a killed agent, or a missing header, are skipped."""
    try:
        with open(path) as f:
            return [dict(zip(cols, r, strict=True)) for r in csv.reader(f) if len(r) == len(cols) and num(r[0])]
    except OSError:
        return []


def append_csv(path, cols, rows):
    # An agent killed between creating the file and writing to it leaves it empty: header then.
    new = not os.path.exists(path) or not os.path.getsize(path)
    with open(path, 'a') as f:
        w = csv.writer(f)
        if new:
            w.writerow(cols)
        w.writerows(rows)


def percent(used, total):
    used, total = num(used), num(total)
    return round(100 * used / total, 1) if used is not None and total else None


def summarise(rows, loader_rows=()):
    """The run's means from utilisation.csv rows (and loader.csv rows): the numbers the diagnosis uses."""
    gpus = sorted({r['gpu'] for r in rows} - {''})
    loader_rows = list(loader_rows)
    last = loader_rows[-1] if loader_rows else {}
    return {'samples': len({r['time'] for r in rows}), 'gpuUtilMean': mean(r['util'] for r in rows),
            'gpuUtilPerGpu': {g: mean(r['util'] for r in rows if r['gpu'] == g) for g in gpus},
            'gpuMemUsedMeanMiB': mean(r['memUsedMiB'] for r in rows),
            'gpuMemTotalMiB': mean(r['memTotalMiB'] for r in rows),
            'gpuMemUsedPercent': mean(percent(r['memUsedMiB'], r['memTotalMiB']) for r in rows),
            'cpuBusyMean': mean(r['cpuBusy'] for r in rows), 'iowaitMean': mean(r['iowait'] for r in rows),
            'dataWaitMean': mean(r['dataWaitPercent'] for r in loader_rows),
            'imagesPerSecondMean': mean(r['imagesPerSecond'] for r in loader_rows),
            'workers': int(num(last['workers'])) if num(last.get('workers')) is not None else None,
            'firstSample': num(rows[0]['time']) if rows else None, 'lastSample': num(rows[-1]['time']) if rows else None}


def series(rows, key, label, t0, value):
    """[(label, minutes, values)] per distinct `key` of the rows, skipping samples without a value."""
    out = []
    for k in sorted({r[key] for r in rows} - {''}):
        pts = [((float(r['time']) - t0) / 60, value(r)) for r in rows if r[key] == k]
        pts = [(x, y) for x, y in pts if y is not None]
        if pts:
            out.append((label(k), [x for x, _ in pts], [y for _, y in pts]))
    return out


class Monitor:
    def __init__(self, cfg, path):
        self.cfg, self.path, self.acc, self.cpu, self.warned = cfg, path, cfg['accelerator'], cpu(), False
        state = os.path.dirname(path)
        # The trainer's figures (examples/cnn/train_cnn.py writes them; any trainer may): read at each sample.
        self.stats_file, self.loader_csv = os.path.join(state, 'trainer-stats.json'), os.path.join(state, 'loader.csv')
        self.last_stats, self.loader, self.drawn = None, {}, None

    def gpus(self):
        """[(index, util %, memory used MiB, memory total MiB)] from nvidia-smi, or npu-smi on Ascend."""
        if self.acc['kind'] == 'ascend':
            # npu-smi's layout varies by version: take the first "Aicore Usage Rate(%) : N" line per card.
            rate = r'Aicore Usage Rate[^:]*:\s*([\d.]+)'
            return [(i, num((re.findall(rate, sh('npu-smi', 'info', '-t', 'usages', '-i', str(i))) or ['x'])[0]), '', '')
                    for i in range(int(self.acc['count']))]
        return [[x[0].strip(), *map(num, x[1:4])] for x in (ln.split(',') for ln in sh(
            'nvidia-smi', '--query-gpu=index,utilization.gpu,memory.used,memory.total',
            '--format=csv,noheader,nounits').splitlines() if ln.strip())]

    def sample(self, log):
        """Append one sample; the highest accelerator utilisation, or None when unknown."""
        try:
            g = self.gpus()
        except (OSError, subprocess.SubprocessError) as e:
            if not self.warned:
                log.warning('accelerator utilisation unavailable (%s): no idle check', e)
            self.warned, g = True, []
        c = cpu()
        d = [b - a for a, b in zip(self.cpu, c, strict=True)]
        self.cpu, tot = c, sum(d) or 1
        rest = round(100 * (tot - d[3] - d[4]) / tot, 1), round(100 * d[4] / tot, 1)
        append_csv(self.path, COLS, ([round(time.time(), 1), *x[:4], *rest] for x in g or [('',) * 4]))
        self.read_stats()
        u = [x[1] for x in g if x[1] is not None]
        return max(u) if u else None

    def read_stats(self):
        """Append the trainer's latest figures to loader.csv when they changed since the last sample."""
        try:
            with open(self.stats_file) as f:
                stats = json.load(f)
        except (OSError, ValueError):
            return  # none yet, or a trainer that does not write them
        if not isinstance(stats, dict) or stats == self.last_stats:
            return
        self.last_stats, self.loader = stats, stats
        row = [round(time.time(), 1), *(stats.get(k, '') for k in LOADER_COLS[1:])]
        append_csv(self.loader_csv, LOADER_COLS, [row])

    def summary(self):
        """(summary with its diagnosis, utilisation rows, loader rows)."""
        rows, loader_rows = read_csv(self.path, COLS), read_csv(self.loader_csv, LOADER_COLS)
        s = summarise(rows, loader_rows)
        facts = diagnosis.context(self.cfg, {**self.loader, 'workers': s['workers']})
        d = diagnosis.diagnose(s, facts)
        # What the run was (for scripts/report.py, which reads summaries without the node config).
        s['context'] = {'stack': self.cfg.get('stack'), 'instanceType': self.cfg.get('instanceType'),
                        'model': self.acc.get('model'), **facts}
        s['diagnosis'] = d
        if d['underLine']:
            s['bottleneck'] = {'kind': d['kind'], 'advice': diagnosis.caption(d)}
        return s, rows, loader_rows

    def warm(self):
        try:
            import matplotlib
            matplotlib.use('Agg')
            from matplotlib import pyplot  # noqa: F401
        except ImportError:
            pass

    def report(self, out, node=None):
        """Write summary.json and utilisation.png (when matplotlib is installed); return the summary."""
        s, rows, loader_rows = self.summary()
        t0 = float(rows[0]['time']) if rows else 0
        first = rows[0]['gpu'] if rows else ''
        word = 'NPU' if self.acc['kind'] == 'ascend' else 'GPU'
        host = [(name, *xy) for key, name in (('cpuBusy', 'CPU busy'), ('iowait', 'I/O wait'))
                for _, *xy in series([r for r in rows if r['gpu'] == first], 'gpu', str, t0,
                                     lambda r, key=key: num(r[key]))]
        waits = [r for r in loader_rows if num(r['dataWaitPercent']) is not None]
        if waits:
            host.append(('data-loader wait', [(float(r['time']) - t0) / 60 for r in waits],
                         [num(r['dataWaitPercent']) for r in waits]))
        try:
            self.drawn = plot.draw(os.path.join(out, 'utilisation.png'),
                                  plot.title(self.cfg.get('stack'), node or 'node', self.cfg.get('instanceType'),
                                             f"{self.acc['count']}x {self.acc.get('model') or word}"
                                             + (', SIMULATED' if self.acc.get('simulated') else ''),
                                             s['firstSample'], s['lastSample']),
                                  diagnosis.caption(s['diagnosis']),
                                  series(rows, 'gpu', lambda g: f'{word} {g}', t0, lambda r: num(r['util'])),
                                  series(rows, 'gpu', lambda g: f'{word} {g}', t0,
                                         lambda r: percent(r['memUsedMiB'], r['memTotalMiB'])),
                                  host)
        except ImportError:
            s['plot'] = 'matplotlib is not installed on the node: no utilisation.png'
        except Exception as e:  # the numbers and the diagnosis stand without the picture
            s['plot'] = f'no utilisation.png: {type(e).__name__}: {e}'
        with open(os.path.join(out, 'summary.json'), 'w') as f:
            json.dump(s, f, indent=1)
        return s
