/*
 * Runs many pulsar-admin command lines in one JVM, for tools/pulsar_admin_table.py (one JVM start per
 * verb costs 10-40 s on a loaded machine). Each line of stdin is one command line, its arguments
 * separated by tabs; each is run by the real org.apache.pulsar.admin.cli.PulsarAdminTool (built once
 * from the client.conf given as the first argument, as bin/pulsar-admin does) and answered on stdout
 * as a block:
 *   @@@BEGIN <n>
 *   <what the command printed on stdout>
 *   @@@STDERR
 *   <what it printed on stderr>
 *   @@@END <n> <0 when the command succeeded, 1 otherwise>
 * It lives in PulsarAdminTool's package only to reach run(String[]) and the commander, which the
 * tool keeps package-private / protected (pulsar-shell runs its commands the same way).
 */
package org.apache.pulsar.admin.cli;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Properties;

public final class PulsarAdminBatch {
    private PulsarAdminBatch() {}

    public static void main(String[] args) throws Exception {
        Properties properties = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            properties.load(in);
        }
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        PulsarAdminTool.setAllowSystemExit(false);
        PulsarAdminTool tool = new PulsarAdminTool(properties);
        BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int n = 0;
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
            if (line.isEmpty()) {
                continue;
            }
            n++;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(outStream);
            System.setErr(errStream);
            tool.commander.setOut(new PrintWriter(outStream, true));
            tool.commander.setErr(new PrintWriter(errStream, true));
            boolean ok;
            try {
                ok = tool.run(line.split("\t", -1));
            } catch (Throwable t) {
                errStream.println(t);
                ok = false;
            }
            System.out.flush();
            System.err.flush();
            System.setOut(realOut);
            System.setErr(realErr);
            realOut.println("@@@BEGIN " + n);
            realOut.print(out.toString(StandardCharsets.UTF_8));
            realOut.println("@@@STDERR");
            realOut.print(err.toString(StandardCharsets.UTF_8));
            realOut.println("@@@END " + n + " " + (ok ? 0 : 1));
            realOut.flush();
        }
        Runtime.getRuntime().halt(0);
    }
}
