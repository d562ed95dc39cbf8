// node's dns.lookup (getaddrinfo in libuv's pool) of argv[2]: prints the addresses' families.
require('dns').lookup(process.argv[2], {all: true}, (e, a) => {
  if (e) { console.log('lookup ' + e.code); process.exit(1); }
  console.log('lookup ' + a.map(x => 'v' + x.family).join(','));
});
