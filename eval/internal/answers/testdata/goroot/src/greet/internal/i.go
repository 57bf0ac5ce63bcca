package internal

const inInternal = "IN-INTERNAL"
