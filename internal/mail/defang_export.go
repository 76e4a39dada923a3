package mail

// Defang makes the URLs and web domains in model-written text unclickable
// (defang with no host allowed): what a channel other than email
// (internal/outhook) shows of a critique is data there too (R-MAIL-2,
// R-CHANNEL-7).
func Defang(s string) string { return defang(s, "") }
