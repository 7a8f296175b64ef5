// The three-step journey of bench/scenario/run for k6: log in, list the items, open one,
// with the same checks as journey.yaml. BASE, VUS and DUR come from the environment.
import http from 'k6/http';
import { check } from 'k6';

const BASE = __ENV.BASE || 'http://127.0.0.1:18430';

export const options = {
  vus: Number(__ENV.VUS || 50),
  duration: __ENV.DUR || '10s',
  summaryTrendStats: ['med', 'p(99)', 'max'],
};

export default function () {
  const login = http.post(`${BASE}/login`, JSON.stringify({ user: `u${__VU}-${__ITER}` }), {
    headers: { 'Content-Type': 'application/json' },
    tags: { name: 'login' },
  });
  check(login, { 'login: status == 200': (r) => r.status === 200 });
  const token = login.json('token');
  if (!token) {
    return;
  }
  const auth = { Authorization: `Bearer ${token}` };
  const list = http.get(`${BASE}/items`, { headers: auth, tags: { name: 'list' } });
  check(list, {
    'list: status == 200': (r) => r.status === 200,
    listed: (r) => r.json('items').length > 0,
  });
  const items = list.json('items');
  if (!items || items.length === 0) {
    return;
  }
  const item = items[Math.floor(Math.random() * items.length)].id;
  const open = http.get(`${BASE}/items/${item}`, { headers: auth, tags: { name: 'open' } });
  check(open, { priced: (r) => r.json('price') > 0 });
}
