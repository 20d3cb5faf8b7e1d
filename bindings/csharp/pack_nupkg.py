#!/usr/bin/env python3
"""Makes DLBridge.<version>.nupkg from DLBridge.nuspec and the files Meson built.

usage: pack_nupkg.py NUSPEC VERSION OUTPUT FILE...

The nuspec's <files> list names each file by its base name (src) and where it goes in the package
(target: a folder, or "" for the package's root); every FILE given here must be named there once,
and every file named there must be given. The package is an OPC zip as NuGet writes it
([Content_Types].xml, _rels/.rels, the nuspec without <files>, core properties), with fixed
timestamps and a fixed order, so the same inputs make the same bytes.

Why not `nuget pack`: Debian's NuGet 2.8.7 validates against its 2013 schema and refuses the
elements a package needs today (<license type="expression">, <repository>, <readme>). The
package this makes is installed by that same nuget in the package test (tests/package_test.sh).

The metadata is checked here, so a package with holes is never made: the version is the
project's, the license is an SPDX expression whose file is in the package at the root, the readme
is in the package, description, authors, projectUrl, repository and tags are set.
"""
import hashlib
import os
import sys
import xml.etree.ElementTree as ET
import zipfile

NS = 'http://schemas.microsoft.com/packaging/2013/05/nuspec.xsd'
# DOS time's first representable day; NuGet refuses entries dated earlier.
STAMP = (1980, 1, 1, 0, 0, 0)
REQUIRED = ['id', 'version', 'authors', 'description', 'license', 'licenseUrl', 'projectUrl',
            'repository', 'readme', 'tags']


def fail(message):
    sys.exit('pack_nupkg.py: ' + message)


def main(argv):
    if len(argv) < 5:
        fail('usage: pack_nupkg.py NUSPEC VERSION OUTPUT FILE...')
    nuspec_path, version, output, inputs = argv[1], argv[2], argv[3], argv[4:]
    ET.register_namespace('', NS)
    tree = ET.parse(nuspec_path)
    package = tree.getroot()
    if package.tag != '{%s}package' % NS:
        fail('%s: the root must be <package xmlns="%s">' % (nuspec_path, NS))
    metadata = package.find('{%s}metadata' % NS)
    files = package.find('{%s}files' % NS)
    if metadata is None or files is None:
        fail('%s: needs <metadata> and <files>' % nuspec_path)

    def text(name):
        element = metadata.find('{%s}%s' % (NS, name))
        return None if element is None else (element.text or '').strip()

    for name in REQUIRED:
        element = metadata.find('{%s}%s' % (NS, name))
        if element is None or not ((element.text or '').strip() or element.attrib):
            fail('%s: <%s> is missing or empty' % (nuspec_path, name))
    if text('version') != version:
        fail('%s: <version> is %s, the project is %s (meson.build): one version everywhere'
             % (nuspec_path, text('version'), version))
    license_element = metadata.find('{%s}license' % NS)
    if license_element.get('type') != 'expression':
        fail('%s: <license type="expression"> expected' % nuspec_path)
    if text('licenseUrl') != 'https://licenses.nuget.org/' + text('license'):
        fail('%s: <licenseUrl> must be https://licenses.nuget.org/%s (what nuget pack writes for '
             'clients older than the <license> element)' % (nuspec_path, text('license')))
    repository = metadata.find('{%s}repository' % NS)
    if not repository.get('url') or not repository.get('type'):
        fail('%s: <repository type=... url=...> expected' % nuspec_path)

    # The files: by base name, each given once and named once.
    given = {}
    for path in inputs:
        name = os.path.basename(path)
        if name in given:
            fail('two inputs named %s' % name)
        given[name] = path
    entries = []
    for element in files.findall('{%s}file' % NS):
        src, target = element.get('src'), element.get('target')
        if src is None or target is None or '/' in src or '\\' in src:
            fail('%s: each <file> needs a base name as src and a target' % nuspec_path)
        if src not in given:
            fail('%s: <file src="%s"> is not among the inputs: %s' % (nuspec_path, src, ' '.join(sorted(given))))
        target = target.strip('/')
        entries.append(((target + '/' if target else '') + src, given.pop(src)))
    if given:
        fail('inputs the nuspec does not place: %s' % ' '.join(sorted(given)))
    names = [name for name, _ in entries]
    for required in ['LICENSE', text('readme')]:
        if required not in names:
            fail('%s: %s must be at the package root' % (nuspec_path, required))

    # The nuspec as it goes into the package: no <files> (NuGet leaves it out too).
    package.remove(files)
    metadata.tail = '\n'
    ident = text('id')
    manifest = ET.tostring(package, encoding='utf-8', xml_declaration=True) + b'\n'
    properties_name = 'package/services/metadata/core-properties/%s.psmdcp' % hashlib.sha1(manifest).hexdigest()[:32]
    properties = (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<coreProperties xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xmlns="http://schemas.openxmlformats.org/package/2006/metadata/core-properties">'
        '<dc:creator>%s</dc:creator><dc:description>%s</dc:description>'
        '<dc:identifier>%s</dc:identifier><version>%s</version><keywords>%s</keywords>'
        '<lastModifiedBy>dlbridge pack_nupkg.py</lastModifiedBy></coreProperties>' % tuple(
            xml_escape(v) for v in (text('authors'), text('description'), ident, version, text('tags'))))
    rels = (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Type="http://schemas.microsoft.com/packaging/2010/07/manifest" '
        'Target="/%s.nuspec" Id="R0" />'
        '<Relationship Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" '
        'Target="/%s" Id="R1" /></Relationships>' % (ident, properties_name))
    # Every part needs a content type: by extension, or an override for names without one.
    defaults = {'rels': 'application/vnd.openxmlformats-package.relationships+xml',
                'psmdcp': 'application/vnd.openxmlformats-package.core-properties+xml',
                'nuspec': 'application/octet'}
    overrides = []
    for name in names:
        base = name.rsplit('/', 1)[-1]
        if '.' in base:
            defaults.setdefault(base.rsplit('.', 1)[1].lower(), 'application/octet')
        else:
            overrides.append(name)
    content_types = (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
        ''.join('<Default Extension="%s" ContentType="%s" />' % kv for kv in sorted(defaults.items())) +
        ''.join('<Override PartName="/%s" ContentType="application/octet" />' % n for n in sorted(overrides)) +
        '</Types>')

    temporary = output + '.tmp'
    with zipfile.ZipFile(temporary, 'w', zipfile.ZIP_DEFLATED) as z:
        def add(name, data):
            info = zipfile.ZipInfo(name, STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
        add('_rels/.rels', rels.encode('utf-8'))
        add(ident + '.nuspec', manifest)
        for name, path in sorted(entries):
            with open(path, 'rb') as f:
                add(name, f.read())
        add(properties_name, properties.encode('utf-8'))
        add('[Content_Types].xml', content_types.encode('utf-8'))
    os.replace(temporary, output)


def xml_escape(value):
    return (value or '').replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


if __name__ == '__main__':
    main(sys.argv)
