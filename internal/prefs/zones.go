package prefs

import "slices"

// zones are the time zones the preference page offers: a bounded list
// covering every UTC offset people keep office hours in, one large city
// each (the IANA database has about 600 names; a select of them all is
// unusable, and a digest hour needs only the offset and its daylight
// saving rules). A recipient's saved zone that is not listed is offered
// too (Zones), and any name LoadZone accepts can be saved.
var zones = []string{
	"UTC",
	"Pacific/Honolulu", "America/Anchorage", "America/Los_Angeles", "America/Denver", "America/Phoenix",
	"America/Chicago", "America/Mexico_City", "America/New_York", "America/Toronto", "America/Bogota",
	"America/Halifax", "America/Santiago", "America/St_Johns", "America/Sao_Paulo", "America/Argentina/Buenos_Aires",
	"Atlantic/Azores", "Europe/London", "Europe/Dublin", "Europe/Lisbon", "Africa/Lagos",
	"Europe/Berlin", "Europe/Paris", "Europe/Madrid", "Europe/Rome", "Europe/Amsterdam",
	"Europe/Stockholm", "Europe/Warsaw", "Africa/Johannesburg", "Africa/Cairo", "Europe/Athens",
	"Europe/Helsinki", "Europe/Kyiv", "Asia/Jerusalem", "Europe/Istanbul", "Europe/Moscow",
	"Africa/Nairobi", "Asia/Riyadh", "Asia/Tehran", "Asia/Dubai", "Asia/Karachi",
	"Asia/Kolkata", "Asia/Kathmandu", "Asia/Dhaka", "Asia/Bangkok", "Asia/Jakarta",
	"Asia/Shanghai", "Asia/Singapore", "Asia/Hong_Kong", "Asia/Taipei", "Australia/Perth",
	"Asia/Seoul", "Asia/Tokyo", "Australia/Adelaide", "Australia/Brisbane", "Australia/Sydney",
	"Pacific/Auckland",
}

// Zones are the zones the page offers, with current (a recipient's saved
// zone) added when it is not among them.
func Zones(current string) []string {
	out := slices.Clone(zones)
	if current != "" && !slices.Contains(out, current) {
		out = append(out, current)
	}
	return out
}
