"""The utilisation report says what held the GPUs back, with the numbers behind it and the advice that fits.

Monitor summaries over written CSVs (the files the agent samples into) for each cause; the plot's
title, 70% line, memory panel and caption; the real agent with a trainer that reports its
data-loader wait; and scripts/report.py over two nodes' reports in a local S3 bucket.
"""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from localcloud import LocalS3
from node_agent import layout, monitor

ROOT = Path(__file__).resolve().parents[2]
T0 = 1764810000.0  # 2025-12-04 01:00 UTC


def write_samples(folder: Path, util, cpu, iowait, mem=50, gpus=2, samples=30, data_wait=None, workers=None,
                  fmt='folder', amp=True):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / 'utilisation.csv', 'w') as f:
        w = csv.writer(f)
        w.writerow(monitor.COLS)
        for i in range(samples):
            w.writerows([T0 + 5 * i, g, util, mem * 160, 16000, cpu, iowait] for g in range(gpus))
    if data_wait is not None:
        with open(folder / 'loader.csv', 'w') as f:
            w = csv.writer(f)
            w.writerow(monitor.LOADER_COLS)
            w.writerows([T0 + 20 * i, 20 * i, 500, data_wait, workers] for i in range(5))
        (folder / 'trainer-stats.json').write_text(json.dumps({'workers': workers, 'format': fmt, 'amp': amp}))


def summary_of(folder: Path, vcpus=32, gpus=2, staged=False):
    cfg = {'stack': 'medium-a10', 'instanceType': 'ecs.gn7i-2x.8xlarge', 'host': {'vcpus': vcpus},
           'accelerator': {'kind': 'nvidia', 'model': 'A10', 'count': gpus}, 'data': {'stage': staged}}
    m = monitor.Monitor(cfg, str(folder / 'utilisation.csv'))
    m.read_stats()
    return m.summary()[0]


@pytest.mark.parametrize('case, want, says, never', [
    # I/O wait first: the storage remedies, packing only where the trainer read loose files.
    (dict(util=40, cpu=50, iowait=25, data_wait=30, workers=8), 'storage',
     ['pack the small files', "stage the data set onto the node's local SSD"], ['raise DataLoader']),
    (dict(util=40, cpu=50, iowait=25, data_wait=30, workers=8, fmt='packed'), 'storage',
     ["stage the data set onto the node's local SSD", 'read each shard in one sequential pass'],
     ['pack the small files']),
    # CPU saturated with too few workers: more workers, a bigger CPU:GPU ratio.
    (dict(util=45, cpu=92, iowait=2, data_wait=40, workers=2), 'cpu',
     ['raise DataLoader workers from 2 to about 8 (half the 32 vCPUs per process)', 'this type has 16 vCPUs per GPU'],
     ['pack the small files']),
    # CPUs with room but the loop waits for batches: the pipeline is too narrow.
    (dict(util=50, cpu=30, iowait=1, data_wait=45, workers=1), 'loader',
     ['raise DataLoader workers from 1 to about 8', 'prefetching', 'pack the small files'], []),
    # Nothing saturated: batch size (memory half empty) and mixed precision.
    (dict(util=55, cpu=20, iowait=1, mem=30, data_wait=3, workers=8, amp=False), 'other',
     ['mixed precision', 'GPU memory is only 30% used'], ['DataLoader workers']),
], ids=['storage-loose-files', 'storage-packed', 'cpu', 'loader', 'other'])
def test_each_cause_gets_its_numbers_and_the_advice_that_fits(tmp_path, case, want, says, never):
    write_samples(tmp_path, **case)
    s = summary_of(tmp_path)
    d = s['diagnosis']
    assert d['kind'] == want and d['underLine'] and s['bottleneck']['kind'] == want, d
    advice = ' | '.join(d['advice'])
    for text in says:
        assert text in advice, (text, d['advice'])
    for text in never:
        assert text not in advice, (text, d['advice'])
    # The evidence carries the measured means the verdict rests on.
    for number in (f"GPU utilisation {case['util']:g}%", f"CPU busy {case['cpu']:g}%",
                   f"I/O wait {case['iowait']:g}%", f"data-loader wait {case['data_wait']:g}%"):
        assert number in d['evidence'], (number, d['evidence'])
    assert s['dataWaitMean'] == case['data_wait'] and s['workers'] == case['workers']


def test_data_already_staged_is_not_told_to_stage(tmp_path):
    write_samples(tmp_path, util=40, cpu=50, iowait=25, data_wait=30, workers=8, fmt='packed')
    d = summary_of(tmp_path, staged=True)['diagnosis']
    assert d['kind'] == 'storage' and not any('stage the data set' in a for a in d['advice']), d
    assert any('already on the local disk' in a for a in d['advice']), d


def test_at_or_above_the_line_is_no_bottleneck(tmp_path):
    write_samples(tmp_path, util=85, cpu=95, iowait=30)
    s = summary_of(tmp_path)
    assert s['diagnosis']['kind'] == 'ok' and not s['diagnosis']['underLine'] and 'bottleneck' not in s
    assert s['gpuMemUsedPercent'] == 50.0


def test_no_samples_is_unknown_not_a_verdict(tmp_path):
    s = summary_of(tmp_path)
    assert s['diagnosis']['kind'] == 'unknown' and s['gpuUtilMean'] is None and 'bottleneck' not in s


def test_the_plot_has_title_line_memory_and_the_diagnosis_as_caption(tmp_path):
    """The node's own plot: accelerators, CPU, I/O and data-loader wait lines, memory per GPU, 70% line."""
    write_samples(tmp_path, util=45, cpu=92, iowait=2, data_wait=40, workers=2)
    cfg = {'stack': 'medium-a10', 'instanceType': 'ecs.gn7i-2x.8xlarge', 'host': {'vcpus': 32},
           'accelerator': {'kind': 'nvidia', 'model': 'A10', 'count': 2}}
    m = monitor.Monitor(cfg, str(tmp_path / 'utilisation.csv'))
    s = m.report(str(tmp_path), 'i-bp1node')
    assert (tmp_path / 'utilisation.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and 'plot' not in s
    assert m.drawn['title'] == ('medium-a10 - i-bp1node (ecs.gn7i-2x.8xlarge, 2x A10)\n'
                                '2025-12-04 01:00 UTC to 01:02 UTC')
    assert m.drawn['lines'] == ['GPU 0', 'GPU 1', 'CPU busy', 'I/O wait', 'data-loader wait', '70% (the guide)',
                                'GPU 0', 'GPU 1']
    caption = m.drawn['caption'].replace('\n', ' ')
    assert caption.startswith(s['diagnosis']['headline']) and 'raise DataLoader workers from 2 to about 8' in caption


def test_the_agent_reports_the_trainers_data_loader_wait(make_node, api_stub, s3):
    api = api_stub('alicloud')
    node = make_node(api=api)
    node.cfg['host'] = {'vcpus': 16}
    node.train(FT_STEPS=60, FT_STEP_S=0.03, FT_UTIL=40, FT_DATA_WAIT=45, FT_WORKERS=1)
    assert node.run() == 0, node.output()
    key = node.key(f'report/{node.id}/summary.json')
    summary = json.loads(s3.get_object(Bucket=node.bucket, Key=key)['Body'].read())
    assert summary['dataWaitMean'] == 45.0 and summary['workers'] == 1, summary
    loader = s3.get_object(Bucket=node.bucket, Key=node.key(f'report/{node.id}/loader.csv'))['Body'].read().decode()
    assert loader.splitlines()[0] == ','.join(monitor.LOADER_COLS)
    d = summary['diagnosis']
    # Which cause depends on this machine's CPU and I/O; the rule is applied to the measured means.
    want = ('storage' if summary['iowaitMean'] >= 10 else 'cpu' if summary['cpuBusyMean'] >= 70 else 'loader')
    assert d['kind'] == want and 'data-loader wait 45%' in d['evidence'], d
    assert any('raise DataLoader workers from 1 to about 8' in a for a in d['advice']), d


FAKE_AWS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


def report_cli(*args, env=None):
    return subprocess.run([sys.executable, str(ROOT / 'scripts' / 'report.py'), *map(str, args)],
                          capture_output=True, text=True, timeout=120, env=env)


def test_report_script_downloads_every_node_and_diagnoses_the_run(tmp_path):
    from tools.stackfiles import stack_spec

    _, spec = stack_spec('medium-a10')
    root = layout.stack_root(spec.checkpoint.prefix, 'medium-a10')
    server = LocalS3()
    try:
        s3 = boto3.client('s3', endpoint_url=server.url, aws_access_key_id='test', aws_secret_access_key='test',
                          region_name='us-east-1')
        s3.create_bucket(Bucket=spec.checkpoint.bucket)
        for node, util in (('i-node0', 40), ('i-node1', 60)):
            write_samples(tmp_path / 'made' / node, util=util, cpu=30, iowait=1, data_wait=45, workers=1)
            for name in ('utilisation.csv', 'loader.csv'):
                s3.upload_file(str(tmp_path / 'made' / node / name), spec.checkpoint.bucket,
                               root + layout.report(node, name))
        env = {**os.environ, **FAKE_AWS, 'ALICLOUD_ACCESS_KEY': 'test', 'ALICLOUD_SECRET_KEY': 'test'}
        out = tmp_path / 'out'
        result = report_cli('medium-a10', '--endpoint', server.url, '--out', out, '--json', env=env)
        assert result.returncode == 0, result.stderr
        doc = json.loads(result.stdout)
        assert sorted(doc['nodes']) == ['i-node0', 'i-node1']
        run = doc['run']
        assert run['gpuUtilMean'] == 50.0 and run['nodes'] == 2 and run['diagnosis']['kind'] == 'loader', run
        assert Path(doc['plot']).read_bytes()[:4] == b'\x89PNG' and Path(doc['plot']).parent == out
        # The table, offline, from what was downloaded.
        text = report_cli('medium-a10', '--dir', out, env={**os.environ, 'COLUMNS': '160'})
        assert text.returncode == 0, text.stderr
        assert 'i-node0' in text.stdout and 'run (2 nodes)' in text.stdout and 'under 70%: loader' in text.stdout
        # No node wrote its summary (context unknown): the advice stays general rather than invent numbers.
        assert 'fix: use more DataLoader workers: about half the vCPUs' in text.stdout
    finally:
        server.stop()


@pytest.mark.parametrize('args, code, says', [
    (['nope'], 2, "no stack 'nope'"),
    (['medium-a10', '--dir', '/nonexistent'], 2, "--dir '/nonexistent': not a folder"),
    (['medium-a10', '--dir', '.', '--endpoint', 'http://x'], 2, '--dir reads a folder'),
])
def test_bad_arguments_exit_2_naming_them(args, code, says):
    result = report_cli(*args)
    assert result.returncode == code and says in result.stderr and 'Traceback' not in result.stderr, result.stderr


def test_a_folder_without_reports_exits_1_saying_where_it_looked(tmp_path):
    result = report_cli('medium-a10', '--dir', tmp_path)
    assert result.returncode == 1 and f'no node reports in {tmp_path}' in result.stderr, result.stderr


def test_a_simulated_accelerator_says_so_in_the_diagnosis_and_the_plot(tmp_path):
    """A rehearsal's fake nvidia-smi (accelerator.simulated) reports fixed figures: never a real verdict."""
    write_samples(tmp_path, util=85, cpu=30, iowait=1, data_wait=2, workers=0)
    cfg = {'stack': 'entry-t4', 'instanceType': 'ecs.gn6i-c8g1.2xlarge', 'host': {'vcpus': 8}, 'nodeCount': 1,
           'accelerator': {'kind': 'nvidia', 'model': 'T4', 'count': 1, 'simulated': True}}
    m = monitor.Monitor(cfg, str(tmp_path / 'utilisation.csv'))
    s = m.report(str(tmp_path), 'i-bp1node')
    assert s['diagnosis']['headline'].startswith('SIMULATED accelerator') and s['diagnosis']['simulated']
    assert 'SIMULATED' in m.drawn['title'] and m.drawn['caption'].startswith('SIMULATED accelerator')


def test_a_replaced_node_is_one_node_and_the_legend_stays_inside(tmp_path):
    """A 1-node stack whose node was preempted and replaced reported twice: the run is 1 node, replaced once;
    36-character instance ids (Tencent's, Huawei's UUIDs) keep the legend inside the axes."""
    from tools.runlib.report import report_folder, table

    for node in ('5f0b1c2d-aaaa-bbbb-cccc-0123456789ab', '9e8d7c6b-dddd-eeee-ffff-ba9876543210'):
        write_samples(tmp_path / node, util=85, cpu=30, iowait=1, data_wait=2, workers=0)
        (tmp_path / node / 'summary.json').write_text(json.dumps({
            **monitor.summarise(monitor.read_csv(tmp_path / node / 'utilisation.csv', monitor.COLS), []),
            'context': {'stack': 'hw-entry-t4', 'nodeCount': 1, 'gpus': 1, 'model': 'T4', 'simulated': True}}))
    result = report_folder(tmp_path, 'hw-entry-t4', every_run=True)
    from node_agent import plot

    drawn = plot.draw(str(tmp_path / 'again.png'), 'title', 'caption', *_series_of(result))
    for legend, axes in drawn['legends']:
        assert legend[0] >= axes[0] - 1 and legend[2] <= axes[2] + 1, (legend, axes)
    from rich.console import Console
    console = Console(width=200, record=True)
    console.print(table(result.nodes, result.run, 'run'))
    text = console.export_text()
    assert 'run (1 node, replaced once)' in text and '(simulated)' in text
    assert result.run['diagnosis']['headline'].startswith('SIMULATED')


def _series_of(result):
    """The combined plot's lines with the nodes' long ids as labels, as tools/runlib/report.draw makes them."""
    util, memory, host = [], [], []
    for n in result.nodes:
        xs = [float(r['time']) / 60 for r in n.rows]
        util.append((n.node, xs, [monitor.num(r['util']) for r in n.rows]))
        memory.append((n.node, xs, [50.0 for _ in n.rows]))
        host.append((f'CPU busy {n.node}', xs, [monitor.num(r['cpuBusy']) for r in n.rows]))
    return util, memory, host
