// A consumer group: its members with their assigned partitions, and the
// group's stored offset and lag on every partition of the topic.

import { api, seg } from '../api.js';
import { h, fill, table, section, stat, errorBox } from '../dom.js';
import { count } from '../format.js';

/**
 * Messages a group still has to read on one partition. The server's `lag`
 * counts a group that never committed from offset 0; once the oldest
 * segments are deleted the next read starts at the first retained offset,
 * so what is left is the partition's retained messages (`messages_count`,
 * which runs from the first retained offset to the current one). A
 * committed offset below the first retained one leaves at most those too.
 */
export function lagOf(line) {
  const retained = Number(line.messages_count);
  if (line.stored_offset === null || line.stored_offset === undefined) return retained;
  return Math.min(Number(line.lag), retained);
}

export async function groupPage(view, streamId, topicId, groupId) {
  const base = `/streams/${seg(streamId)}/topics/${seg(topicId)}`;
  const head = h('div', { class: 'page-head' });
  const body = h('div', { class: 'page-body' });
  fill(view.main, head, body);
  const load = async () => {
    try {
      const [stream, topic, group, offsets] = await Promise.all([
        api('GET', `/streams/${seg(streamId)}`),
        api('GET', base),
        api('GET', `${base}/consumer-groups/${seg(groupId)}`),
        api('GET', `${base}/consumer-groups/${seg(groupId)}/offsets`),
      ]);
      view.crumbs([
        ['Streams', '/streams'],
        [stream.name, `/streams/${stream.id}`],
        [topic.name, `/streams/${stream.id}/topics/${topic.id}`],
        [group.name],
      ]);
      fill(head, h('div', null, h('h1', null, group.name), h('p', null, `Consumer group ${group.id} on topic ${topic.name}`)));
      const owner = new Map();
      for (const member of group.members) for (const p of member.partitions) owner.set(p, member.id);
      const totalLag = offsets.reduce((sum, line) => sum + lagOf(line), 0);
      fill(
        body,
        h('div', { class: 'stats' }, stat('Members', count(group.members_count)), stat('Partitions', count(group.partitions_count)), stat('Total lag', count(totalLag))),
        section(
          'Members',
          null,
          table(
            [
              { title: 'Member (client ID)', cell: (m) => m.id, numeric: true },
              { title: 'Partitions assigned', cell: (m) => count(m.partitions_count), numeric: true },
              { title: 'Assignment', cell: (m) => (m.partitions.length ? [...m.partitions].sort((a, b) => a - b).join(', ') : 'None') },
            ],
            group.members,
            'No members. Clients join over TCP, QUIC or WebSocket.',
            'Members',
          ),
        ),
        section(
          'Offsets and lag',
          null,
          table(
            [
              { title: 'Partition', cell: (o) => o.partition_id, numeric: true },
              { title: 'Member', cell: (o) => (owner.has(o.partition_id) ? owner.get(o.partition_id) : 'Unassigned') },
              { title: 'Current offset', cell: (o) => count(o.current_offset), numeric: true },
              { title: 'Committed offset', cell: (o) => (o.stored_offset === null ? 'None' : count(o.stored_offset)), numeric: true },
              { title: 'Lag', cell: (o) => count(lagOf(o)), numeric: true },
            ],
            offsets,
            'The topic has no partitions.',
            'Offsets and lag',
          ),
        ),
      );
    } catch (e) {
      fill(body, errorBox(e.message));
    }
  };
  await load();
  view.refresh(load);
}
