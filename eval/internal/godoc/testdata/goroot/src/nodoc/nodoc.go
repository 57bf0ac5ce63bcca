package nodoc

// X is documented; the package is not.
const X = 1
