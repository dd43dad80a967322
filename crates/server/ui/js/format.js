// Formatting of server values for display, and the decoding of message
// payloads and user headers. Everything here returns plain strings.

/** u64::MAX, the "never" and "unlimited" sentinel of the API. */
export const U64_MAX = '18446744073709551615';

const numberFormat = new Intl.NumberFormat('en-US');

export function count(value) {
  if (value === null || value === undefined) return '–';
  if (typeof value === 'string') return value;
  return numberFormat.format(value);
}

function pad(n) {
  return String(n).padStart(2, '0');
}

/** Unix microseconds as local "YYYY-MM-DD HH:MM:SS". */
export function timestamp(micros) {
  if (!micros) return '–';
  const date = new Date(Number(micros) / 1000);
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** A duration in microseconds, in words ("3 d 4 h", "12 min 5 s"). */
export function duration(micros) {
  if (String(micros) === U64_MAX) return 'Never';
  let seconds = Math.floor(Number(micros) / 1_000_000);
  const units = [
    ['d', 86_400],
    ['h', 3_600],
    ['min', 60],
    ['s', 1],
  ];
  const parts = [];
  for (const [name, size] of units) {
    if (seconds >= size) {
      parts.push(`${Math.floor(seconds / size)} ${name}`);
      seconds %= size;
    }
    if (parts.length === 2) break;
  }
  return parts.length ? parts.join(' ') : '0 s';
}

/** A byte count as a short human size. */
export function bytes(n) {
  if (String(n) === U64_MAX) return 'Unlimited';
  let value = Number(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

export function base64ToBytes(text) {
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i += 1) out[i] = raw.charCodeAt(i);
  return out;
}

export function bytesToBase64(data) {
  let raw = '';
  for (const byte of data) raw += String.fromCharCode(byte);
  return btoa(raw);
}

const utf8 = new TextDecoder('utf-8');
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

export function text(data) {
  return utf8.decode(data);
}

/** Whether the bytes are valid UTF-8. */
export function isText(data) {
  try {
    utf8Strict.decode(data);
    return true;
  } catch {
    return false;
  }
}

/** A hex dump: offset, 16 bytes, and their printable ASCII. */
export function hexDump(data) {
  const lines = [];
  for (let offset = 0; offset < data.length; offset += 16) {
    const chunk = data.subarray(offset, offset + 16);
    const hex = Array.from(chunk, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(chunk, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join('\n');
}

export function hex(data) {
  return Array.from(data, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * A payload in the chosen view: `text`, `json` (pretty, or the text with a
 * note when it is not JSON) or `hex`. Returns `{ body, note }`.
 */
export function payloadView(data, view) {
  if (view === 'hex') return { body: hexDump(data), note: '' };
  const decoded = text(data);
  if (view === 'json') {
    try {
      return { body: JSON.stringify(JSON.parse(decoded), null, 2), note: '' };
    } catch {
      return { body: decoded, note: 'Not JSON; shown as text.' };
    }
  }
  return { body: decoded, note: isText(data) ? '' : 'Not valid UTF-8; try the hex view.' };
}

/** The header kinds of the API, in the order of the wire codes. */
export const HEADER_KINDS = [
  'raw', 'string', 'bool', 'int8', 'int16', 'int32', 'int64', 'int128',
  'uint8', 'uint16', 'uint32', 'uint64', 'uint128', 'float32', 'float64',
];

const INT_WIDTHS = { int8: 1, int16: 2, int32: 4, int64: 8, int128: 16, uint8: 1, uint16: 2, uint32: 4, uint64: 8, uint128: 16 };

function littleEndian(data, signed) {
  let value = 0n;
  for (let i = data.length - 1; i >= 0; i -= 1) value = (value << 8n) | BigInt(data[i]);
  const bits = BigInt(data.length * 8);
  if (signed && data.length > 0 && data[data.length - 1] & 0x80) value -= 1n << bits;
  return value;
}

/** A header field (`{kind, value: base64}`) decoded by its kind. */
export function headerValue(field) {
  const data = base64ToBytes(field.value ?? '');
  const view = new DataView(data.buffer);
  switch (field.kind) {
    case 'string':
      return text(data);
    case 'bool':
      return data[0] ? 'true' : 'false';
    case 'float32':
      return data.length === 4 ? String(view.getFloat32(0, true)) : hex(data);
    case 'float64':
      return data.length === 8 ? String(view.getFloat64(0, true)) : hex(data);
    default:
      if (INT_WIDTHS[field.kind] === data.length) {
        return littleEndian(data, field.kind.startsWith('int')).toString();
      }
      return `0x${hex(data)}`;
  }
}

/** A header value typed by a person, as the bytes of its kind. */
export function encodeHeaderValue(kind, input) {
  if (kind === 'string') return new TextEncoder().encode(input);
  if (kind === 'raw') {
    const clean = input.replace(/^0x/, '').replace(/\s+/g, '');
    if (!/^([0-9a-fA-F]{2})*$/.test(clean)) throw new Error('A raw header value is written as hex digits, two per byte.');
    return Uint8Array.from(clean.match(/../g) ?? [], (pair) => parseInt(pair, 16));
  }
  if (kind === 'bool') {
    if (!['true', 'false'].includes(input.trim())) throw new Error('A bool header value is true or false.');
    return Uint8Array.of(input.trim() === 'true' ? 1 : 0);
  }
  if (kind === 'float32' || kind === 'float64') {
    const number = Number(input);
    if (input.trim() === '' || Number.isNaN(number)) throw new Error(`A ${kind} header value must be a number.`);
    const data = new Uint8Array(kind === 'float32' ? 4 : 8);
    const view = new DataView(data.buffer);
    if (kind === 'float32') view.setFloat32(0, number, true);
    else view.setFloat64(0, number, true);
    return data;
  }
  const width = INT_WIDTHS[kind];
  let value;
  try {
    value = BigInt(input.trim());
  } catch {
    throw new Error(`A ${kind} header value must be a whole number.`);
  }
  const bits = BigInt(width * 8);
  const signed = kind.startsWith('int');
  const min = signed ? -(1n << (bits - 1n)) : 0n;
  const max = signed ? (1n << (bits - 1n)) - 1n : (1n << bits) - 1n;
  if (value < min || value > max) throw new Error(`${input} does not fit in ${kind}.`);
  if (value < 0n) value += 1n << bits;
  const data = new Uint8Array(width);
  for (let i = 0; i < width; i += 1) {
    data[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return data;
}

/** A duration in microseconds, exactly, as the server parses it ("7d 4h"). */
export function exactDuration(micros) {
  let rest = BigInt(micros);
  const units = [['w', 604_800_000_000n], ['d', 86_400_000_000n], ['h', 3_600_000_000n], ['m', 60_000_000n], ['s', 1_000_000n], ['ms', 1_000n], ['us', 1n]];
  const parts = [];
  for (const [name, size] of units) {
    if (rest >= size) {
      parts.push(`${rest / size}${name}`);
      rest %= size;
    }
  }
  return parts.join(' ');
}

const SIZE_UNITS = { B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, PB: 1e15, EB: 1e18, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40, PiB: 2 ** 50, EiB: 2 ** 60 };

/** A size string of the API ("45544 KiB") shortened for reading ("44.5 MiB"). */
export function size(textValue) {
  const match = /^([\d.]+) ([A-Za-z]+)$/.exec(String(textValue ?? '').trim());
  if (!match || !(match[2] in SIZE_UNITS)) return String(textValue ?? '–');
  return bytes(Math.round(Number(match[1]) * SIZE_UNITS[match[2]]));
}
