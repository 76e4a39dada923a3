package store

// RejectedClass is the error class of a row SES rejected.
const RejectedClass = "REJECTED"
