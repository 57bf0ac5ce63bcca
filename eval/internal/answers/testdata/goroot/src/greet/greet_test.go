package greet

const testOnly = "TEST-ONLY"
