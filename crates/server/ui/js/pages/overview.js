// Overview: the server's figures from GET /stats and its connected
// clients from GET /clients.

import { api } from '../api.js';
import { h, fill, stat, table, section, errorBox } from '../dom.js';
import { count, duration, size, timestamp } from '../format.js';

function stats(s) {
  return h(
    'div',
    { class: 'stats' },
    stat('Streams', count(s.streams_count)),
    stat('Topics', count(s.topics_count)),
    stat('Partitions', count(s.partitions_count)),
    stat('Segments', count(s.segments_count)),
    stat('Messages', count(s.messages_count)),
    stat('Stored', size(s.messages_size_bytes)),
    stat('Consumer groups', count(s.consumer_groups_count)),
    stat('Clients', count(s.clients_count)),
  );
}

function server(s) {
  const rows = [
    ['Version', s.iggy_server_version],
    ['Uptime', duration(s.run_time)],
    ['Started', timestamp(s.start_time)],
    ['Host', `${s.hostname} (${s.os_name} ${s.os_version}, kernel ${s.kernel_version})`],
    ['Process', `PID ${s.process_id}, ${count(s.threads_count)} threads`],
    ['CPU', `${Number(s.cpu_usage).toFixed(1)} % (host ${Number(s.total_cpu_usage).toFixed(1)} %)`],
    ['Memory', `${size(s.memory_usage)} used; host ${size(s.available_memory)} free of ${size(s.total_memory)}`],
    ['Disk', `${size(s.free_disk_space)} free of ${size(s.total_disk_space)}`],
    ['Disk I/O', `${size(s.read_bytes)} read, ${size(s.written_bytes)} written`],
  ];
  return section('Server', null, h('dl', { class: 'kv' }, rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])));
}

function clients(list) {
  return section(
    'Connected clients',
    null,
    table(
      [
        { title: 'Client ID', cell: (c) => c.client_id, numeric: true },
        { title: 'User ID', cell: (c) => (c.user_id === null ? 'Not signed in' : c.user_id) },
        { title: 'Address', cell: (c) => h('span', { class: 'mono' }, c.address) },
        { title: 'Transport', cell: (c) => h('span', { class: 'badge' }, c.transport) },
        { title: 'Consumer groups', cell: (c) => count(c.consumer_groups_count), numeric: true },
      ],
      list,
      'No clients are connected.',
      'Connected clients',
    ),
  );
}

export async function overviewPage(view) {
  view.crumbs([['Overview']]);
  const body = h('div', { class: 'page-body' });
  fill(view.main, h('div', { class: 'page-head' }, h('div', null, h('h1', null, 'Overview'), h('p', null, 'How the server is doing right now.'))), body);
  const load = async () => {
    try {
      const [s, list] = await Promise.all([api('GET', '/stats'), api('GET', '/clients')]);
      fill(body, h('div', { class: 'stack' }, stats(s), server(s), clients(list)));
    } catch (e) {
      fill(body, errorBox(e.message));
    }
  };
  await load();
  view.refresh(load);
}
