// Upgrade nudges fetch from the public registry: a test reaches only loopback.
export default { agentRules: false, experimental: { agentUpgrade: false } };
