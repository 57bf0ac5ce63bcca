package greet

const windowsOnly = "WINDOWS-ONLY"
