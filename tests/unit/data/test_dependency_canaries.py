"""Canaries for behaviour of libraries we do not import ourselves but a parser depends on.

markitdown's DOCX converter rewrites word/document.xml through BeautifulSoup's "xml" builder
(lxml underneath) before mammoth reads it. When lxml 6.2.0 stopped passing an element's own
namespace declarations to the parser target, every ``w:`` prefix was dropped and every .docx
failed with "Could not find the body element" (issue 41). This test names that break directly,
so that `make latest` (newest allowed versions) says which library moved, not only that three
parser tests failed.
"""

from importlib.metadata import version

from bs4 import BeautifulSoup

WORD_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def test_beautifulsoup_xml_round_trip_keeps_namespace_prefixes():
    document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                f'<w:document xmlns:w="{WORD_NS}"><w:body><w:p><w:r><w:t>hello</w:t></w:r>'
                f'</w:p></w:body></w:document>')
    written = str(BeautifulSoup(document, features="xml"))
    assert "<w:body>" in written and "<w:t>hello</w:t>" in written, (
        f"BeautifulSoup {version('beautifulsoup4')} with lxml {version('lxml')} drops namespace "
        f"prefixes in an xml round trip (markitdown's DOCX path then finds no w:body): keep "
        f"pyproject.toml's lxml bound until this passes. Written: {written[:200]!r}")


def test_lxml_target_receives_the_elements_own_namespace_declarations():
    from lxml import etree

    seen = []

    class Target:
        def start(self, tag, attrib, nsmap=None):
            seen.append((tag, dict(nsmap or {})))

        def end(self, tag):
            pass

        def data(self, data):
            pass

        def close(self):
            return None

    parser = etree.XMLParser(target=Target())
    parser.feed(f'<w:document xmlns:w="{WORD_NS}"><w:body/></w:document>'.encode())
    parser.close()
    assert seen[0] == (f"{{{WORD_NS}}}document", {"w": WORD_NS}), (
        f"lxml {version('lxml')} passes {seen[0][1]!r} as the root's nsmap to a parser target "
        "(6.1 passed the declarations; 6.2.0 passes an empty mapping, which breaks "
        "BeautifulSoup's xml builder and so markitdown's DOCX parser)")
