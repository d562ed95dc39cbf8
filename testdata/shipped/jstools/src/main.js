'use strict';

const { greet } = require('./greet');

console.log(greet('eslint'));
