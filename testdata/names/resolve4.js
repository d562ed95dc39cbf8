// node's dns.resolve4 (c-ares: DNS only, the resolv.conf's servers) of argv[2].
require('dns').resolve4(process.argv[2], (e, a) => {
  if (e) { console.log('resolve4 ' + e.code); process.exit(1); }
  console.log('resolve4 ' + a.length);
});
