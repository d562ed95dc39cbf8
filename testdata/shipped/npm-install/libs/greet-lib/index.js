'use strict';
exports.greet = (name) => `hello, ${name}`;
