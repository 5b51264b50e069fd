//! Tests of the zstd:chunked and eStargz writers against what their readers do: decode the
//! whole stream, find the TOC where the annotations (or the footer) say, and fetch each file
//! by its TOC range alone.

use std::io::Read;

use super::*;
use crate::layer::testdata::test_sample;
use crate::layer::{estargz, TarWriter};

/// A tar of files of many sizes (empty, small, several chunks), a dir, a symlink, a hardlink.
fn sample_tar() -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let mut t = TarWriter::new(Vec::new(), 1_700_000_000);
    t.append_dir("d", 0o755, 0, 0).unwrap();
    let mut files = Vec::new();
    for (i, n) in [0usize, 1, 5000, 300_000, 9 << 20].into_iter().enumerate() {
        let data = test_sample(n, 100 + i as u64);
        let name = format!("d/f{i}");
        t.append_file(&name, 0o644, 1000, 1000, n as u64, &mut &data[..])
            .unwrap();
        files.push((name, data));
    }
    t.append_symlink("d/l", "f1", 0, 0).unwrap();
    t.append_hardlink("d/h", "d/f2", 0o644, 1000, 1000).unwrap();
    (t.finish().unwrap(), files)
}

fn chunked(tar: &[u8], piece: usize) -> (Vec<u8>, BTreeMap<String, String>) {
    let mut c = Chunked::new(Vec::new(), 3).unwrap();
    for p in tar.chunks(piece) {
        c.write_all(p).unwrap();
    }
    c.finish().unwrap()
}

#[test]
fn crc64_is_gos_iso_crc() {
    // hash/crc64 with crc64.MakeTable(crc64.ISO), of "123456789".
    let mut c = Crc64::new();
    c.update(b"1234");
    c.update(b"56789");
    assert_eq!(u64::from_be_bytes(c.sum()), 0xb909_56c7_75a4_1001);
}

#[test]
fn zstd_chunked_decodes_to_the_tar_and_its_toc_locates_every_file() {
    let (tar, files) = sample_tar();
    let (blob, notes) = chunked(&tar, 100_000);
    assert!(
        zstd::decode_all(&blob[..]).unwrap() == tar,
        "plain zstd decoders see the tar"
    );
    assert_eq!(
        chunked(&tar, 777).0,
        blob,
        "independent of how the tar is handed over"
    );
    assert_eq!(
        notes[annotations::OLD_POSITION],
        notes[annotations::POSITION]
    );
    assert_eq!(
        notes[annotations::OLD_CHECKSUM],
        notes[annotations::CHECKSUM]
    );
    // The TOC where the annotation says, with the digest it says.
    let pos: Vec<usize> = notes[annotations::POSITION]
        .split(':')
        .map(|v| v.parse().unwrap())
        .collect();
    let toc_z = &blob[pos[0]..pos[0] + pos[1]];
    assert_eq!(&blob[pos[0] - 8..pos[0] - 4], &SKIPPABLE_MAGIC);
    assert_eq!(Digest::of(toc_z).to_string(), notes[annotations::CHECKSUM]);
    let toc_json = zstd::decode_all(toc_z).unwrap();
    assert_eq!(toc_json.len(), pos[2]);
    assert_eq!(pos[3], 1);
    let toc: serde_json::Value = serde_json::from_slice(&toc_json).unwrap();
    // The footer repeats the positions.
    let footer = &blob[blob.len() - 64..];
    assert_eq!(&footer[56..], FOOTER_MAGIC);
    let word = |i: usize| u64::from_le_bytes(footer[i * 8..i * 8 + 8].try_into().unwrap());
    assert_eq!(word(0) as usize, pos[0]);
    assert_eq!(word(1) as usize, pos[1]);
    // The tar-split: its digest in the TOC; its segments and files rebuild the tar.
    let (so, sl) = (word(4) as usize, word(5) as usize);
    let split_z = &blob[so..so + sl];
    assert_eq!(
        toc["tarSplitDigest"].as_str().unwrap(),
        Digest::of(split_z).to_string()
    );
    let split = zstd::decode_all(split_z).unwrap();
    assert_eq!(split.len() as u64, word(6));
    let mut rebuilt = Vec::new();
    let mut by_name: BTreeMap<&str, &[u8]> = BTreeMap::new();
    for (n, d) in &files {
        by_name.insert(n, d);
    }
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    for (i, line) in split
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let e: serde_json::Value = serde_json::from_slice(line).unwrap();
        assert_eq!(e["position"], i);
        match e["type"].as_u64().unwrap() {
            2 => rebuilt.extend(b64.decode(e["payload"].as_str().unwrap()).unwrap()),
            1 => {
                let size = e["size"].as_u64().unwrap_or(0);
                if size > 0 {
                    let data = by_name[e["name"].as_str().unwrap()];
                    let mut crc = Crc64::new();
                    crc.update(data);
                    assert_eq!(
                        b64.decode(e["payload"].as_str().unwrap()).unwrap(),
                        crc.sum()
                    );
                    rebuilt.extend_from_slice(data);
                } else {
                    assert!(e["payload"].is_null());
                }
            }
            t => panic!("type {t}"),
        }
    }
    assert!(rebuilt == tar, "tar-split rebuilds the tar");
    // Every file from its TOC range alone, chunk by chunk; metadata as in the tar.
    let entries = toc["entries"].as_array().unwrap();
    assert_eq!(entries[0]["type"], "dir");
    assert_eq!(entries[0]["name"], "d/");
    assert_eq!(entries[0]["mode"], 0o755);
    assert_eq!(entries[0]["modtime"], "2023-11-14T22:13:20Z");
    let mut multi = false;
    for (name, data) in &files {
        let i = entries.iter().position(|e| e["name"] == *name).unwrap();
        let e = &entries[i];
        assert_eq!(e["type"], "reg");
        assert_eq!(e["uid"], 1000);
        assert_eq!(e["size"].as_u64().unwrap_or(0), data.len() as u64);
        if data.is_empty() {
            assert!(e.get("digest").is_none() && e.get("offset").is_none());
            continue;
        }
        assert_eq!(e["digest"], Digest::of(data).to_string());
        let (start, end) = (
            e["offset"].as_u64().unwrap(),
            e["endOffset"].as_u64().unwrap(),
        );
        let whole = zstd::decode_all(&blob[start as usize..end as usize]).unwrap();
        assert!(whole == *data, "{name} from [{start}, {end})");
        // Chunks: the regular entry and the `chunk` entries after it.
        let chunks: Vec<&serde_json::Value> = std::iter::once(e)
            .chain(entries[i + 1..].iter().take_while(|c| c["type"] == "chunk"))
            .collect();
        if chunks.len() > 1 {
            multi = true;
            let mut ends: Vec<u64> = chunks[1..]
                .iter()
                .map(|c| c["offset"].as_u64().unwrap())
                .collect();
            ends.push(end);
            for (c, cend) in chunks.iter().zip(ends) {
                let at = c["chunkOffset"].as_u64().unwrap_or(0) as usize;
                let size = c["chunkSize"].as_u64().unwrap() as usize;
                let got =
                    zstd::decode_all(&blob[c["offset"].as_u64().unwrap() as usize..cend as usize])
                        .unwrap();
                assert!(got == data[at..at + size], "{name} chunk at {at}");
                assert_eq!(
                    c["chunkDigest"],
                    Digest::of(&data[at..at + size]).to_string()
                );
            }
        }
    }
    assert!(multi, "the large files were cut into chunks");
    let h = entries.iter().find(|e| e["name"] == "d/h").unwrap();
    assert_eq!(
        (h["type"].as_str(), h["linkName"].as_str()),
        (Some("hardlink"), Some("d/f2"))
    );
}

#[test]
fn estargz_decodes_to_the_tar_with_its_toc_and_its_toc_locates_every_file() {
    let (tar, files) = sample_tar();
    let write = |piece: usize| {
        let mut e = estargz::Estargz::new(Vec::new(), 6, 1_700_000_000);
        for p in tar.chunks(piece) {
            e.write_all(p).unwrap();
        }
        e.finish().unwrap()
    };
    let done = write(100_000);
    assert!(write(333).out == done.out);
    let blob = &done.out;
    let mut all = Vec::new();
    flate2::read::MultiGzDecoder::new(&blob[..])
        .read_to_end(&mut all)
        .unwrap();
    assert_eq!(
        (Digest::of(&all), all.len() as u64),
        (done.diff_id, done.uncompressed_size)
    );
    assert!(
        crate::layer::testdata::system_gunzip(blob) == all,
        "gzip(1) reads it"
    );
    // The stream is the tar's entries, then the TOC entry, then the end of the archive.
    assert!(all[..tar.len() - 1024] == tar[..tar.len() - 1024]);
    let mut ar = ::tar::Archive::new(&all[..]);
    let names: Vec<String> = ar
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert_eq!(names.last().map(String::as_str), Some(estargz::TOC_NAME));
    // The footer: 51 bytes, the TOC offset in its extra field; a gzip member at that offset
    // holds the TOC entry, whose JSON has the annotated digest.
    let footer = &blob[blob.len() - 51..];
    assert_eq!(&footer[12..14], b"SG");
    let off = usize::from_str_radix(std::str::from_utf8(&footer[16..32]).unwrap(), 16).unwrap();
    assert_eq!(&footer[32..38], b"STARGZ");
    let mut toc_tar = Vec::new();
    flate2::read::GzDecoder::new(&blob[off..blob.len() - 51])
        .read_to_end(&mut toc_tar)
        .unwrap();
    let size = usize::from_str_radix(std::str::from_utf8(&toc_tar[124..135]).unwrap(), 8).unwrap();
    let json = &toc_tar[512..512 + size];
    assert_eq!(
        Digest::of(json).to_string(),
        done.annotations[estargz::annotations::TOC_DIGEST]
    );
    let toc: serde_json::Value = serde_json::from_slice(json).unwrap();
    let entries = toc["entries"].as_array().unwrap();
    // Each file's chunks, each from its own member up to the next offset.
    let offsets: Vec<u64> = entries
        .iter()
        .filter_map(|e| e["offset"].as_u64())
        .collect();
    let next = |o: u64| {
        offsets
            .iter()
            .copied()
            .find(|&x| x > o)
            .unwrap_or(off as u64)
    };
    for (name, data) in &files {
        let i = entries.iter().position(|e| e["name"] == *name).unwrap();
        assert_eq!(entries[i]["digest"], Digest::of(data).to_string());
        if data.is_empty() {
            continue;
        }
        let mut at = 0usize;
        for c in std::iter::once(&entries[i])
            .chain(entries[i + 1..].iter().take_while(|c| c["type"] == "chunk"))
        {
            assert_eq!(c["chunkOffset"].as_u64().unwrap_or(0) as usize, at);
            let o = c["offset"].as_u64().unwrap();
            let size = c["chunkSize"].as_u64().unwrap_or((data.len() - at) as u64) as usize;
            let mut got = Vec::new();
            flate2::read::GzDecoder::new(&blob[o as usize..next(o) as usize])
                .take(size as u64)
                .read_to_end(&mut got)
                .unwrap();
            assert!(got == data[at..at + size], "{name} at {at}");
            assert_eq!(c["chunkDigest"], Digest::of(&got).to_string());
            at += size;
        }
        assert_eq!(at, data.len());
    }
}
