#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""What a replay comes to: rows per host kind, with the model's density."""


def model_density(scen, config_name, mix):
    """VMs per node of a configuration by the per-node model, for a mix.

    Each workload's single-flavor density d_w (``compare``'s figure) taken
    as a share of a node: n VMs of the mix's shares p_w fit while
    sum(p_w n / d_w) <= 1. Workloads the configuration cannot run are left
    out of its mix.
    """
    from nova_pmem_filters.planner import model
    from nova_pmem_filters.planner import vmsizing
    config = scen.configs.get(config_name)
    if config is None:
        return None
    node = model.node(config, scen.policies)
    weights = {}
    for name, wanted in mix.items():
        workload = scen.workloads[name]
        if wanted <= 0 or not workload.request.allows(config.mode):
            continue
        vms, _binding = vmsizing.density(node, workload, scen.policies)
        if vms:
            weights[name] = (wanted, vms)
    total = sum(w for w, _d in weights.values())
    if not total:
        return None
    return 1.0 / sum((w / total) / d for w, d in weights.values())


SUMMARY_COLUMNS = (
    'kind', 'mode', 'nodes', 'vms_mean', 'vms_peak', 'density_mean',
    'model_density', 'planned_vms', 'memory_util', 'vcpu_util',
    'cache_pressure_mean', 'cache_pressure_max', 'fragmentation', 'boots',
    'rejected', 'rejected_by')
SHORT_COLUMNS = ('kind', 'nodes', 'vms_mean', 'density_mean',
                 'model_density', 'planned_vms', 'memory_util',
                 'cache_pressure_max', 'rejected')


def _mean(frame, column):
    if column not in frame or frame[column].isna().all():
        return None
    return round(float(frame[column].mean()), 4)


def summary(result, scen=None, mix=None, planned=None, settle=0.5):
    """Rows of the report: per host kind and the total.

    Means are over the samples after the first ``settle`` share of the
    trace (the fleet fills up before it).
    """
    timeline = result.timeline
    late = timeline[timeline['day'] >= settle * timeline['day'].max()]
    fleet = result.fleet
    rows = []
    for i, kind in enumerate(fleet.kinds):
        column = 'vms:%s' % kind.name
        mode = kind.profile.mode
        vms_mean = float(late[column].mean())
        row = {'kind': kind.name, 'mode': mode, 'nodes': kind.count,
               'vms_mean': round(vms_mean, 1),
               'vms_peak': int(timeline[column].max()),
               'density_mean': round(vms_mean / kind.count, 3),
               'model_density': None, 'planned_vms': None}
        if scen is not None and mix:
            density = model_density(scen, kind.name, mix)
            row['model_density'] = (None if density is None
                                    else round(density, 3))
        if planned is not None:
            row['planned_vms'] = planned.get(kind.name)
        sel = fleet.kind == i
        row['memory_util'] = round(float(
            (fleet.mem_used[sel].sum()) / fleet.mem_cap[sel].sum()), 4)
        row['vcpu_util'] = round(float(
            fleet.vcpu_used[sel].sum() / fleet.vcpu_cap[sel].sum()), 4)
        if kind.profile.tiered:
            pressure = fleet.charged_mb()[sel] / fleet.cache_mb[sel]
            row['cache_pressure_mean'] = round(float(pressure.mean()), 4)
            row['cache_pressure_max'] = round(float(pressure.max()), 4)
        rows.append(row)
    rejected = {reason: sum(by.values())
                for reason, by in result.rejected.items() if by}
    total = {
        'kind': 'total', 'nodes': len(fleet),
        'vms_mean': round(float(late['vms'].mean()), 1),
        'vms_peak': int(timeline['vms'].max()),
        'density_mean': round(float(late['vms'].mean()) / len(fleet), 3),
        'planned_vms': (sum(v for v in planned.values() if v)
                        if planned else None),
        'memory_util': round(float(fleet.mem_used.sum()
                                   / fleet.mem_cap.sum()), 4),
        'vcpu_util': round(float(fleet.vcpu_used.sum()
                                 / fleet.vcpu_cap.sum()), 4),
        'cache_pressure_mean': _mean(late, 'cache_pressure_mean'),
        'cache_pressure_max': (None if 'cache_pressure_max' not in timeline
                               else round(float(
                                   timeline['cache_pressure_max'].max()),
                                   4)),
        'fragmentation': _mean(late, 'fragmentation'),
        'boots': result.boots,
        'rejected': sum(rejected.values()),
        'rejected_by': ', '.join('%s=%d' % item
                                 for item in sorted(rejected.items())),
    }
    if scen is not None and mix:
        # Over the whole fleet only when every kind has a model figure.
        if all(r['model_density'] is not None for r in rows):
            total['model_density'] = round(sum(
                r['model_density'] * r['nodes'] for r in rows)
                / len(fleet), 3)
    rows.append(total)
    return [{c: r.get(c) for c in SUMMARY_COLUMNS} for r in rows]
