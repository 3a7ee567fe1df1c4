"""msprobe's --xlsx workbook: its geometry is checked before anything expands it, and XML that is
malformed, declares entities (a "billion laughs" bomb, an external entity reading a local file) or
holds a giant cell is refused with one line (exit 2), in bounded time and memory.

Each hostile workbook is a real one (an msprobe compare result written with openpyxl, as msprobe does)
with one part changed the way an attacker would: a 2 KB file with one cell at XFD1048576 expanded to
~17 billion cells through pandas (MemoryError, exit 3); a 0.4 MB file with one 400 MB cell passed the
512 MiB file bound and reached 3.7 GB."""

from __future__ import annotations

import csv
import re
import zipfile
from pathlib import Path

import pytest

from .conftest import advisor_process

MSPROBE = "Ascend__msprobe/test__msprobe_test__resources__compare_result_20230703104808.csv"
SHEET = "xl/worksheets/sheet1.xml"
LIMIT = ["--format", "json", "-q"]


@pytest.fixture
def workbook(realdata, tmp_path) -> Path:
    """msprobe's compare result as the workbook `msprobe compare --xlsx` writes."""
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    with realdata(MSPROBE).open(encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle):
            book.active.append(row)
    path = tmp_path / "compare_result_20230703104808.xlsx"
    book.save(path)
    return path


@pytest.fixture
def excel_workbook(workbook) -> Path:
    """The same workbook as Excel saves it: its texts in xl/sharedStrings.xml (openpyxl writes them inline)."""
    strings: list[bytes] = []

    def shared(match: re.Match) -> bytes:
        strings.append(match.group(2))
        return match.group(1) + b' t="s"><v>%d</v></c>' % (len(strings) - 1)

    with zipfile.ZipFile(workbook) as source:
        parts = {item.filename: source.read(item.filename) for item in source.infolist()}
    parts[SHEET] = re.sub(rb'(<c r="[A-Z]+\d+")(?: s="\d+")? t="inlineStr"><is><t[^>]*>(.*?)</t></is></c>', shared,
                          parts[SHEET])
    parts["xl/sharedStrings.xml"] = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<sst xmlns="http://'
                                     b'schemas.openxmlformats.org/spreadsheetml/2006/main" count="%d" uniqueCount="%d">'
                                     % (len(strings), len(strings))
                                     + b"".join(b"<si><t>%s</t></si>" % s for s in strings) + b"</sst>")
    parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(
        b"</Types>", b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-'
        b'officedocument.spreadsheetml.sharedStrings+xml"/></Types>')
    parts["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(
        b"</Relationships>", b'<Relationship Id="rIdSS" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        b'relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>')
    path = workbook.with_name("excel_" + workbook.name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in parts.items():
            target.writestr(name, data)
    assert strings
    return path


def rewrite(path: Path, part: str, change) -> Path:
    """``path`` with zip member ``part`` replaced by ``change(its bytes)`` (the others copied as they are)."""
    out = path.with_name("hostile_" + path.name)
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            target.writestr(item.filename, change(data) if item.filename == part else data)
    return out


def run(path: Path, tmp_path: Path, memory_gib: float = 2.5):
    """advisor run in a child with an address-space cap: a bomb shows as MemoryError (exit 3), not a dead machine."""
    return advisor_process("run", path, "-o", tmp_path / "out", *LIMIT, timeout=120, memory=int(memory_gib * 2**30))


@pytest.mark.parametrize("saved_by", ["openpyxl", "excel"])
def test_the_real_workbook_is_read(workbook, excel_workbook, tmp_path, saved_by):
    result = run(workbook if saved_by == "openpyxl" else excel_workbook, tmp_path)
    assert result.code in (0, 1), result.err
    report = (tmp_path / "out" / "report.json").read_text(encoding="utf-8")
    assert "Functional_linear_0_forward" in report or '"findings"' in report


def test_one_cell_at_the_last_column_and_row_is_refused(workbook, tmp_path):
    cell = b'<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>x</t></is></c></row></sheetData>'
    hostile = rewrite(workbook, SHEET, lambda xml: re.sub(rb'<dimension ref="[^"]*" ?/>', b"", xml)
                      .replace(b"</sheetData>", cell))
    assert hostile.stat().st_size < 10_000
    line = run(hostile, tmp_path).one_line_error(str(hostile))
    assert "column" in line or "rows" in line


def test_a_declared_dimension_of_the_whole_sheet_is_refused(workbook, tmp_path):
    hostile = rewrite(workbook, SHEET, lambda xml: re.sub(rb'<dimension ref="[^"]*" ?/>',
                                                          b'<dimension ref="A1:XFD1048576"/>', xml))
    assert "declares" in run(hostile, tmp_path).one_line_error(str(hostile))


@pytest.mark.parametrize(("columns", "refused"), [("AB", False), ("AH", True)])
def test_every_msprobe_layout_fits_at_excels_row_limit(workbook, tmp_path, columns, refused):
    """msprobe's widest compare layout has 28 columns: a sheet of them on all 1,048,576 rows Excel allows is
    read (its rows are then streamed and counted as they come); 34 columns on every row is refused."""
    declared = rewrite(workbook, SHEET, lambda xml: re.sub(rb'<dimension ref="[^"]*" ?/>',
                                                           b'<dimension ref="A1:%s1048576"/>' % columns.encode(), xml))
    result = run(declared, tmp_path)
    if refused:
        assert "declares" in result.one_line_error(str(declared))
    else:
        assert result.code in (0, 1), result.err


def test_a_giant_cell_is_refused_before_it_is_read(workbook, tmp_path):
    giant = b"9" * (400 * 2**20)
    hostile = rewrite(workbook, SHEET, lambda xml: xml.replace(b"<v>1.0</v>", b"<v>" + giant + b"</v>", 1)
                      if b"<v>1.0</v>" in xml else xml.replace(b"</t>", giant + b"</t>", 1))
    assert hostile.stat().st_size < 2 * 2**20
    assert "cell" in run(hostile, tmp_path).one_line_error(str(hostile))


def test_a_giant_shared_string_is_refused(excel_workbook, tmp_path):
    giant = b"x" * (64 * 2**20)
    hostile = rewrite(excel_workbook, "xl/sharedStrings.xml", lambda xml: xml.replace(b"</t>", giant + b"</t>", 1))
    assert "cell" in run(hostile, tmp_path).one_line_error(str(hostile))


BOMB = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lollollollollollollollollollol">'
        + b"".join(b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
                   for i in range(1, 10)) + b"]>")
XXE = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY secret SYSTEM "file:///etc/hostname">]>'


@pytest.mark.parametrize("name, prolog, text", [("bomb", BOMB, b"&lol9;"), ("xxe", XXE, b"&secret;")])
def test_entity_declarations_are_refused(excel_workbook, tmp_path, name, prolog, text):
    def change(xml: bytes) -> bytes:
        body = xml.split(b"?>", 1)[1] if xml.startswith(b"<?xml") else xml
        return prolog + body.replace(b"</t>", text + b"</t>", 1)
    hostile = rewrite(excel_workbook, "xl/sharedStrings.xml", change)
    line = run(hostile, tmp_path).one_line_error(str(hostile))
    assert "DTD" in line or "entit" in line
    assert Path("/etc/hostname").read_text().strip() not in line


@pytest.mark.parametrize("part", [SHEET, "xl/workbook.xml", "xl/sharedStrings.xml", "[Content_Types].xml"])
def test_malformed_xml_in_any_part_is_one_line(excel_workbook, tmp_path, part):
    hostile = rewrite(excel_workbook, part, lambda xml: xml[: len(xml) // 2] + b"<<&" + xml[len(xml) // 2:])
    run(hostile, tmp_path).one_line_error(str(hostile))


def test_a_workbook_that_is_not_a_zip_is_one_line(workbook, tmp_path):
    hostile = tmp_path / "compare_result_1.xlsx"
    hostile.write_bytes(workbook.read_bytes()[:500])
    run(hostile, tmp_path).one_line_error(str(hostile))


REAL_WORKBOOKS = sorted((Path(__file__).resolve().parents[1] / "data").rglob("*.xlsx"))


@pytest.mark.parametrize("path", REAL_WORKBOOKS, ids=lambda p: p.parent.name + "/" + p.name)
def test_workbooks_msprobe_wrote_read_as_pandas_read_them(path):
    pytest.importorskip("openpyxl")
    import pandas as pd
    from pandas.io.parsers import TextParser

    from advisor.ingest.xlsx import read_first_sheet

    expected = pd.read_excel(path, sheet_name=0, header=None, dtype=str, engine="openpyxl")
    rows = read_first_sheet(path, 1 << 30)
    pd.testing.assert_frame_equal(TextParser(rows, header=None, dtype=str, skip_blank_lines=False).read(), expected)


def test_the_cells_are_those_pandas_read_excel_gave(workbook, tmp_path):
    """The bounded reader replaces pd.read_excel: same frame for the same workbook, numbers, blanks, NA
    words, booleans and trailing empty cells included."""
    openpyxl = pytest.importorskip("openpyxl")
    import pandas as pd
    from pandas.io.parsers import TextParser

    from advisor.ingest.xlsx import read_first_sheet

    book = openpyxl.load_workbook(workbook)
    sheet = book.active
    sheet.append([1, 2.5, None, "N/A", True, "", 3.0, "text", None])
    sheet.append([])
    sheet.append([None, None, "x"])
    sheet["T40"] = 7
    book.save(workbook)
    expected = pd.read_excel(workbook, sheet_name=0, header=None, dtype=str, engine="openpyxl")
    rows = read_first_sheet(workbook, 1 << 30)
    pd.testing.assert_frame_equal(TextParser(rows, header=None, dtype=str, skip_blank_lines=False).read(), expected)


@pytest.mark.parametrize("cut", [16, 600, 2000])
def test_a_workbook_with_bytes_cut_from_its_first_part_is_one_line(workbook, tmp_path, cut):
    """Found by the long fuzz run: the zip's directory then points before the start of the file (a
    negative seek: OSError, exit 3)."""
    data = workbook.read_bytes()
    hostile = tmp_path / "compare_result_2.xlsx"
    hostile.write_bytes(data[:64] + data[64 + cut:])
    run(hostile, tmp_path).one_line_error(str(hostile))
