"""What held the accelerators back: the guide's 70% rule applied to a run's measured means, with the
numbers behind the verdict and the advice that fits them.

The selection guide gives the line and the remedies: a GPU utilisation under 70% means the bottleneck
is the CPU or I/O; use mixed precision, DataLoader workers about half the CPU cores, prefetching,
packed formats instead of millions of small files, and data on the local SSD. The cut-offs that pick
between the causes (I/O wait 10%, CPU busy 70%, data-loader wait 20%, GPU memory 50%) are our
heuristics, not sourced figures; docs/data.md says so too.

Standard library only, no imports from the agent: the node runs it at the end of training
(monitor.py), scripts/report.py on the user's machine over every node's summary.
"""

UTIL_LINE = 70         # the guide's threshold (percent)
IOWAIT_HIGH = 10       # heuristic: the CPUs wait for storage this much of the time
CPU_BUSY_HIGH = 70     # heuristic: the CPUs have little left for the input pipeline
DATA_WAIT_HIGH = 20    # heuristic: the training loop waits this much of its time for the next batch
MEMORY_LOW = 50        # heuristic: a batch that fills less than this of GPU memory could grow

# Remedies, by cause. Each is a function of the run's numbers, so the advice says what to change
# from what to; `None` leaves the remedy out where the numbers say it does not apply.


def _workers(n):
    w, rec = n.get('workers'), n.get('workersAdvised')
    if w is None or rec is None:
        return 'use more DataLoader workers: about half the vCPUs per training process'
    if w < rec:
        return f'raise DataLoader workers from {w} to about {rec} (half the {n["vcpus"]} vCPUs per process)'
    return None


def _ratio(n):
    per = n.get('vcpusPerGpu')
    what = f'this type has {per:g} vCPUs per GPU' if per else 'the vCPUs per GPU'
    return f'a bigger CPU-to-GPU ratio: {what}; pick an instance type with more (the guide: 8-16 per GPU)'


# bench/data_read.py on a disk throttled to an ESSD's IOPS and MB/s: one random read per image, folder or
# shards, costs about as many disk reads (1.06 vs 0.74 per image); reading a shard in one pass, 0.02.
def _pack(n):
    if n.get('packed'):
        return ('read each shard in one sequential pass: one random read per image in the shards costs nearly'
                ' as many disk reads as a folder (bench/data_read.py)')
    return ('pack the small files into shards (scripts/pack.py) and read each shard in one sequential pass'
            ' (bench/data_read.py: about 50x fewer disk reads per image than a folder; one random read per'
            ' image in the shards, only 1.4x fewer)')


def _stage(n):
    if n.get('staged'):
        return 'the set is already on the local disk: a faster disk class (ESSD PL2/PL3) or more prefetching'
    return "stage the data set onto the node's local SSD (the stack's data: config) instead of reading it remotely"


def _batch(n):
    mem = n.get('gpuMemUsedPercent')
    if mem is not None and mem < MEMORY_LOW:
        return f'a larger batch: GPU memory is only {mem:g}% used'
    return None


def _amp(n):
    return 'turn mixed precision on (--amp on)' if n.get('amp') is False else None


ADVICE = {
    'storage': (_pack, _stage, _workers),
    'cpu': (_workers, _ratio, lambda n: 'lighter CPU augmentation, or decode on the GPU'),
    'loader': (_workers, lambda n: 'more prefetching per worker', _pack),
    'other': (_amp, _batch, lambda n: 'check synchronisation (host-device copies, .item() per step), '
                                     'then profile a few steps'),
}
CAUSE = {
    'storage': 'storage: the CPUs wait for I/O',
    'cpu': 'CPU: data loading and augmentation use the CPUs up',
    'loader': 'the input pipeline: the training loop waits for batches while the CPUs have room',
    'other': 'neither CPU nor storage is saturated',
}


def _fmt(value, unit='%'):
    return 'unknown' if value is None else f'{value:g}{unit}'


def context(cfg, loader=None):
    """The facts about the node the advice needs: vCPUs, GPUs, workers, how the data arrives."""
    loader = loader or {}
    host, acc = cfg.get('host') or {}, cfg.get('accelerator') or {}
    vcpus, gpus = host.get('vcpus'), acc.get('count') or 1
    return {'vcpus': vcpus, 'gpus': gpus, 'vcpusPerGpu': round(vcpus / gpus, 1) if vcpus else None,
            # A rehearsal's fake accelerator (accelerator.simulated): its figures are no measurement.
            'simulated': bool(acc.get('simulated')), 'nodeCount': cfg.get('nodeCount'),
            'workersAdvised': max(1, vcpus // gpus // 2) if vcpus else None,
            'staged': bool((cfg.get('data') or {}).get('stage')),
            # Staged sets are packed (scripts/pack.py); the trainer says what it read ('packed', 'folder').
            'packed': bool((cfg.get('data') or {}).get('stage')) or loader.get('format') == 'packed',
            'workers': loader.get('workers'), 'amp': loader.get('amp')}


SIMULATED = 'SIMULATED accelerator (a rehearsal: fixed figures, no measurement): '


def diagnose(summary, facts=None):
    """{kind, underLine, headline, evidence, advice: [..], simulated} from a summary's means (monitor.summarise).

    kind: 'unknown' (no utilisation was sampled), 'ok' (at or above the line), or the likely cause
    below it: 'storage', 'cpu', 'loader', 'other'. A simulated accelerator (facts['simulated']) says so
    at the start of the headline, wherever it is shown.
    """
    d = _diagnose(summary, facts)
    d['simulated'] = bool((facts or {}).get('simulated'))
    if d['simulated']:
        d['headline'] = SIMULATED + d['headline']
    return d


def _diagnose(summary, facts):
    n = {**(facts or {}), **{k: summary.get(k) for k in ('gpuUtilMean', 'cpuBusyMean', 'iowaitMean',
                                                          'dataWaitMean', 'gpuMemUsedPercent')}}
    util = n['gpuUtilMean']
    evidence = (f"GPU utilisation {_fmt(util)} (line {UTIL_LINE}%), CPU busy {_fmt(n['cpuBusyMean'])}, "
                f"I/O wait {_fmt(n['iowaitMean'])}, data-loader wait {_fmt(n['dataWaitMean'])}, "
                f"GPU memory {_fmt(n['gpuMemUsedPercent'])} used")
    if n.get('workers') is not None:
        evidence += f", {n['workers']} DataLoader workers"
    if n.get('vcpus'):
        evidence += f", {n['vcpus']} vCPUs for {n['gpus']} GPUs"
    if util is None:
        return {'kind': 'unknown', 'underLine': None, 'headline': 'no accelerator utilisation was sampled',
                'evidence': evidence, 'advice': []}
    if util >= UTIL_LINE:
        advice = [a for a in (_batch(n),) if a]
        return {'kind': 'ok', 'underLine': False, 'evidence': evidence, 'advice': advice,
                'headline': f'mean GPU utilisation {util:g}% is at or above {UTIL_LINE}%: the GPUs are the bottleneck'}
    if (n['iowaitMean'] or 0) >= IOWAIT_HIGH:
        kind = 'storage'
    elif (n['cpuBusyMean'] or 0) >= CPU_BUSY_HIGH:
        kind = 'cpu'
    elif (n['dataWaitMean'] or 0) >= DATA_WAIT_HIGH:
        kind = 'loader'
    else:
        kind = 'other'
    advice = [a for a in (f(n) for f in ADVICE[kind]) if a]
    return {'kind': kind, 'underLine': True, 'evidence': evidence, 'advice': advice,
            'headline': f'mean GPU utilisation {util:g}% is under {UTIL_LINE}%: {CAUSE[kind]}'}


def caption(d):
    """One paragraph for under a plot: the verdict, the numbers, the advice."""
    text = f"{d['headline']}. {d['evidence']}."
    if d['advice']:
        text += ' Fix: ' + '; '.join(d['advice']) + '.'
    return text
