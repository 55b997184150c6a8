"""Utilisation sampling (accelerators, CPU busy, I/O wait) to a CSV, and the end-of-run report.

The CSV lives in the agent's state dir, so a restarted agent keeps appending and the report covers
the whole run. Under 70% mean GPU utilisation (the guide's threshold) the summary names the likely
bottleneck. The 10% iowait and 70% CPU-busy cut-offs that pick between storage and data loading
are our heuristics, not sourced figures.
"""
import csv
import json
import os
import re
import subprocess
import time
from contextlib import suppress

FIX = {'storage': 'high I/O wait: storage is the bottleneck; pack small files (LMDB, tar shards) and cache the '
                  'data on the local NVMe/ESSD disk',
       'cpu': 'CPU busy: data loading/augmentation is the bottleneck; use more DataLoader workers (about half '
              'the vCPUs) and lighter augmentation',
       'other': 'neither CPU nor storage is saturated: check batch size, AMP and synchronisation, then profile'}


COLS = 'time', 'gpu', 'util', 'memUsedMiB', 'memTotalMiB', 'cpuBusy', 'iowait'


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


class Monitor:
    def __init__(self, cfg, path):
        self.path, self.acc, self.cpu, self.warned = path, cfg['accelerator'], cpu(), False

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
        # An agent killed between creating the file and writing to it leaves it empty: header then.
        new = not os.path.exists(self.path) or not os.path.getsize(self.path)
        with open(self.path, 'a') as f:
            w = csv.writer(f)
            if new:
                w.writerow(COLS)
            w.writerows([round(time.time(), 1), *x[:4], *rest] for x in g or [('',) * 4])
        u = [x[1] for x in g if x[1] is not None]
        return max(u) if u else None

    def summary(self):
        try:
            with open(self.path) as f:
                # Rows cut short by a killed agent, or a missing header, are skipped, not fatal.
                rows = [dict(zip(COLS, r, strict=True)) for r in csv.reader(f) if len(r) == len(COLS) and num(r[0])]
        except OSError:
            rows = []
        gpus = sorted({r['gpu'] for r in rows} - {''})
        s = {'samples': len({r['time'] for r in rows}), 'gpuUtilMean': mean(r['util'] for r in rows),
             'gpuUtilPerGpu': {g: mean(r['util'] for r in rows if r['gpu'] == g) for g in gpus},
             'gpuMemUsedMeanMiB': mean(r['memUsedMiB'] for r in rows),
             'cpuBusyMean': mean(r['cpuBusy'] for r in rows), 'iowaitMean': mean(r['iowait'] for r in rows)}
        u = s['gpuUtilMean']
        if u is not None and u < 70:
            k = 'storage' if (s['iowaitMean'] or 0) >= 10 else 'cpu' if (s['cpuBusyMean'] or 0) >= 70 else 'other'
            s['bottleneck'] = {'kind': k, 'advice': f'mean GPU utilisation {u}% is under 70%: {FIX[k]}'}
        return s, rows, gpus

    def warm(self):
        with suppress(ImportError):
            import matplotlib
            matplotlib.use('Agg')
            from matplotlib import pyplot  # noqa: F401

    def report(self, out):
        """Write summary.json and utilisation.png (when matplotlib is installed); return the summary."""
        s, rows, gpus = self.summary()
        try:
            import matplotlib
            matplotlib.use('Agg')
            from matplotlib import pyplot as plt
            t0, first = (float(rows[0]['time']), rows[0]['gpu']) if rows else (0, '')
            series = [(f'GPU {g}', 'util', g) for g in gpus] + [(k, k, first) for k in ('cpuBusy', 'iowait')]
            for label, col, g in series:
                r = [x for x in rows if x['gpu'] == g and num(x[col]) is not None]
                plt.plot([(float(x['time']) - t0) / 60 for x in r], [float(x[col]) for x in r], label=label)
            plt.xlabel('minutes')
            plt.ylabel('%')
            plt.legend()
            plt.savefig(os.path.join(out, 'utilisation.png'), dpi=80)
            plt.close()
        except ImportError:
            s['plot'] = 'matplotlib is not installed on the node: no utilisation.png'
        with open(os.path.join(out, 'summary.json'), 'w') as f:
            json.dump(s, f, indent=1)
        return s
