// Calls to the server's HTTP API with the signed-in bearer, and the
// session kept in sessionStorage (gone when the tab closes). Failures are
// turned into sentences: the console shows words, not error codes.

const SESSION_KEY = 'iggy-console.session';
/** Refresh the token when less than this is left of it (seconds). */
const REFRESH_MARGIN_S = 300;

let onSignedOut = () => {};
let refreshing = null;

export const session = {
  get() {
    try {
      return JSON.parse(sessionStorage.getItem(SESSION_KEY));
    } catch {
      return null;
    }
  },
  set(value) {
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(value));
  },
  clear() {
    sessionStorage.removeItem(SESSION_KEY);
  },
};

/** Called with a sentence when the server no longer accepts the session. */
export function whenSignedOut(listener) {
  onSignedOut = listener;
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const WORDS = {
  invalid_credentials: 'The username or password is not right.',
  user_inactive: 'This user is inactive and cannot sign in.',
  invalid_personal_access_token: 'The access token is not valid or has expired.',
  invalid_access_token: 'Your session is no longer valid. Sign in again.',
  unauthenticated: 'Your session has ended. Sign in again.',
  access_token_missing: 'You are not signed in.',
  unauthorized: 'You do not have permission to do this.',
  not_found: 'It was not found. It may have been deleted.',
  resource_not_found: 'It was not found. It may have been deleted.',
  stream_id_not_found: 'The stream was not found. It may have been deleted.',
  topic_id_not_found: 'The topic was not found. It may have been deleted.',
  partition_not_found: 'The partition does not exist.',
  consumer_group_id_not_found: 'The consumer group was not found.',
  stream_name_already_exists: 'A stream with this name already exists.',
  topic_name_already_exists: 'A topic with this name already exists in this stream.',
  invalid_stream_name: 'A stream name must be 1 to 255 bytes long.',
  invalid_topic_name: 'A topic name must be 1 to 255 bytes long.',
  user_already_exists: 'A user with this username already exists.',
  invalid_username: 'A username must be 3 to 50 characters long.',
  invalid_password: 'A password must be 3 to 100 characters long.',
  cannot_delete_user: 'The root user cannot be deleted.',
  cannot_change_permissions: "The root user's permissions cannot be changed.",
  personal_access_token_already_exists: 'You already have a token with this name.',
  invalid_personal_access_token_name: 'A token name must be 3 to 30 characters long.',
  personal_access_tokens_limit_reached: 'You have as many tokens as a user may have. Delete one first.',
  consumer_group_name_already_exists: 'A consumer group with this name already exists on this topic.',
  too_many_partitions: 'Between 1 and 1000 partitions can be added or removed at a time.',
  invalid_partitions_count: 'The topic does not have that many partitions.',
  invalid_messages_count: 'Add at least one message.',
  invalid_key_value_length: 'A partition key must be 1 to 255 bytes long.',
  invalid_option_value: 'One of the values is not accepted by the server.',
  unsupported_option_key: 'One of the settings cannot be changed.',
  payload_too_large: 'The request is larger than the server accepts (http.max_request_size).',
  too_many_in_flight_writes: 'Too many writes are waiting. Try again in a moment.',
  server_busy: 'The server is busy. Try again in a moment.',
  transient_not_accepted: 'The server could not take the request just now. Try again in a moment.',
  transient_not_committed: 'The server did not confirm the change in time. It may still be applied; check before trying again.',
  produce_timeout: 'The server did not confirm the messages in time. They may still be stored.',
};

function byStatus(status) {
  if (status === 400) return 'The server refused the request as it was written.';
  if (status === 401) return 'Your session has ended. Sign in again.';
  if (status === 403) return 'You do not have permission to do this.';
  if (status === 404) return 'It was not found. It may have been deleted.';
  if (status === 413) return 'The request is larger than the server accepts.';
  if (status === 415 || status === 422) return 'The server could not read the request.';
  if (status === 429) return 'Too many requests are waiting. Try again in a moment.';
  if (status >= 500) return 'The server had a problem answering. Try again in a moment.';
  return 'The server did not accept the request.';
}

function sentence(text) {
  const trimmed = String(text).trim();
  if (!trimmed) return '';
  const capital = trimmed[0].toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** The sentence for an error answer. */
export function describe(status, body) {
  if (body && typeof body === 'object') {
    if (WORDS[body.code]) return WORDS[body.code];
    if (body.reason) return sentence(body.reason);
  }
  return byStatus(status);
}

/**
 * JSON with integers too large for a JS number (message ids, checksums,
 * the u64::MAX sentinels) kept exactly, as decimal strings.
 */
export function parseJson(text) {
  return JSON.parse(text, (key, value, context) => {
    if (typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && /^-?\d+$/.test(context.source)) {
      return context.source;
    }
    return value;
  });
}

async function send(method, path, { body, query, bearer } = {}) {
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const url = query ? `${path}?${new URLSearchParams(query)}` : path;
  let response;
  try {
    response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, 'network', 'The server cannot be reached. Check that it is running, then try again.');
  }
  const text = await response.text();
  if (!response.ok) {
    let parsed = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    throw new ApiError(response.status, parsed?.code ?? '', describe(response.status, parsed));
  }
  return text ? parseJson(text) : null;
}

async function refreshIfDue(current) {
  const left = current.expiry - Date.now() / 1000;
  if (left > REFRESH_MARGIN_S || left <= 0 || current.expiry === 0) return;
  refreshing ??= send('POST', '/users/refresh-token', { body: { token: current.token } })
    .then((identity) => session.set({ ...current, token: identity.access_token.token, expiry: identity.access_token.expiry }))
    .catch(() => {})
    .finally(() => {
      refreshing = null;
    });
  await refreshing;
}

/** An authenticated call; a 401 ends the session. */
export async function api(method, path, options = {}) {
  const current = session.get();
  if (!current) {
    onSignedOut('Sign in to continue.');
    throw new ApiError(401, 'access_token_missing', 'You are not signed in.');
  }
  await refreshIfDue(current);
  try {
    return await send(method, path, { ...options, bearer: session.get()?.token });
  } catch (error) {
    if (error.status === 401) {
      session.clear();
      onSignedOut('Your session has ended. Sign in again.');
    }
    throw error;
  }
}

/** Signs in with a username and password. */
export async function signInWithPassword(username, password) {
  const identity = await send('POST', '/users/login', { body: { username, password } });
  session.set({ token: identity.access_token.token, expiry: identity.access_token.expiry, userId: identity.user_id, username });
}

/** Signs in with a personal access token. */
export async function signInWithToken(token) {
  const identity = await send('POST', '/personal-access-tokens/login', { body: { token } });
  session.set({ token: identity.access_token.token, expiry: identity.access_token.expiry, userId: identity.user_id, username: '' });
  const me = await api('GET', '/users/me');
  session.set({ ...session.get(), username: me.username });
}

/** Ends the server-side session, then forgets the token. */
export async function signOut() {
  const current = session.get();
  if (current) {
    try {
      await send('DELETE', '/users/logout', { bearer: current.token });
    } catch {
      // Signing out locally still ends the console's session.
    }
  }
  session.clear();
}

/** A path segment for an identifier (ids are numbers; names are encoded). */
export function seg(value) {
  return encodeURIComponent(String(value));
}
