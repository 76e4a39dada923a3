package dynamo

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
)

// The stored form of what is written once and read back whole (a
// delivery's rendered message, a job's critique): compressed so that
// each item bills as few write units as its content allows (R-COST-5,
// R-COST-6).
//
// Why a preset dictionary: DEFLATE finds repeats within what it
// compresses, and one email or critique is small, so most of what it
// shares with every other (the email template's markup and styles, the
// critique's JSON keys and rule wording) was paid for again in each.
// With the dictionary those are references from the first byte: a
// rendered email of 10 KB with five findings makes a message item of
// 2.1 KB without it and under 1 KB with it, one write unit where it was
// three (TestDeliveryRow_StoredCompactMessageIdentical). compress/flate takes a dictionary as it is (NewWriterDict), so
// no library is needed.
//
// A dictionary never changes once shipped: the items written with it
// are read with it for as long as they are kept. Its stored form starts
// with the dictionary's version (a byte); a new dictionary (the template
// changed enough that the old one no longer pays) is a new file and a
// new version, and the old one stays to read what it wrote. Items
// written before the dictionaries start with gzip's magic (0x1f 0x8b),
// which no version uses, and still read. TestCompact_DictionariesFrozen
// pins each file's digest.
//
// message-v1.json is the stored JSON of mail.SampleData's email (its
// first four findings) as the renderer drew it on 2026-12-07;
// critique-v1.json is that sample's critique with a ledger, usage and
// changes filled in.
var (
	//go:embed dict/message-v1.json
	messageDictV1 []byte
	//go:embed dict/critique-v1.json
	critiqueDictV1 []byte
)

// A dictionary's version, the first byte of what it compressed.
const dictV1 = 1

// messageDicts and critiqueDicts are each kind's dictionaries by version.
var (
	messageDicts  = map[byte][]byte{dictV1: messageDictV1}
	critiqueDicts = map[byte][]byte{dictV1: critiqueDictV1}
)

// maxInflated bounds what one stored form inflates to: larger than any
// message or critique the store writes (a DynamoDB item is at most
// 400 KB, and its content compresses at most about 1:1000).
const maxInflated = 8 << 20

// compact compresses b with the dictionary of version v from dicts.
func compact(b []byte, dicts map[byte][]byte, v byte) ([]byte, error) {
	var z bytes.Buffer
	z.WriteByte(v)
	zw, err := flate.NewWriterDict(&z, flate.BestCompression, dicts[v])
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}

// expand reads what compact wrote with one of dicts, or gzip (written
// before the dictionaries).
func expand(stored []byte, dicts map[byte][]byte) ([]byte, error) {
	if len(stored) == 0 {
		return nil, errors.New("empty stored form")
	}
	var r io.Reader
	if len(stored) >= 2 && stored[0] == 0x1f && stored[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(stored))
		if err != nil {
			return nil, err
		}
		r = zr
	} else {
		dict, ok := dicts[stored[0]]
		if !ok {
			return nil, fmt.Errorf("stored form of unknown version %d", stored[0])
		}
		zr := flate.NewReaderDict(bytes.NewReader(stored[1:]), dict)
		defer zr.Close()
		r = zr
	}
	b, err := io.ReadAll(io.LimitReader(r, maxInflated+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInflated {
		return nil, fmt.Errorf("stored form inflates past %d bytes", maxInflated)
	}
	return b, nil
}
