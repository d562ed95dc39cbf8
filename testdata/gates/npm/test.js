// The fixture's test: no dependencies, no network.
const assert = require("assert");
assert.strictEqual(1 + 1, 2);
console.log("ok");
