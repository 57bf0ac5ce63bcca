package x

const inTestdata = "IN-TESTDATA"
