#!/usr/bin/env python3
"""Markdown tables from meshloop-bench JSON lines: one table per loop and mesh size, one row per
strategy x layout, kernel and end-to-end times (ms, medians) without and with GPS reordering.
usage: table.py FILE.jsonl [FILE.jsonl ...]   (later files replace earlier rows with the same key)"""
import json
import sys

rows = {}
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        rows[(r['loop'], r['cells'], r['backend'], r['strategy'], r['layout'], r['reordering'])] = r

for loop in ('c2p', 'edge'):
    for cells in sorted({k[1] for k in rows if k[0] == loop}):
        title = 'cells -> points mean (Cell Data to Point Data)' if loop == 'c2p' else \
            'edges -> cells residual (Airfoil-like)'
        print(f'\n**{title}, {cells:,} cells, 4 components, double**\n')
        print('| backend | strategy | layout | kernel, original (ms) | kernel, GPS (ms) | '
              'end-to-end, original (ms) | end-to-end, GPS (ms) | cold, original (ms) | colours (orig / GPS) |')
        print('|---|---|---|---|---|---|---|---|---|')
        for backend in ('CUDA', 'CPU'):
            for strategy in ('VTK-like-gather', 'GlobalAtomics', 'GlobalColouring', 'HierarchicalColouring'):
                for layout in ('AoS', 'SoA'):
                    a = rows.get((loop, cells, backend, strategy, layout, 'None'))
                    b = rows.get((loop, cells, backend, strategy, layout, 'GPS'))
                    if not a and not b:
                        continue
                    f = lambda r, k: ('%.2f' % r[k]) if r and r[k] else '-'
                    colours = '%s / %s' % (a['colours'] if a else '-', b['colours'] if b else '-')
                    name = strategy + (' (%d threads)' % (a or b)['threads'] if backend == 'CPU' else '')
                    print(f'| {backend} | {name} | {layout} | {f(a, "kernel_ms")} | {f(b, "kernel_ms")} | '
                          f'{f(a, "end_to_end_ms")} | {f(b, "end_to_end_ms")} | {f(a, "cold_ms")} | {colours} |')
